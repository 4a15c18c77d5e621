//! `loadgen`: Toolgate under load, end to end, as LLM applications use it.
//!
//! Starts upstreams (an rmcp server with `echo` and `add` in this process, one with 5,000
//! tools, and the Python SDK's FastMCP server with `echo` over streamable HTTP on `mcp` 2.x and
//! 1.x, legacy SSE and stdio), a release `toolgate serve` on the given PostgreSQL with its
//! default logging, and agentgateway when `AGENTGATEWAY_BIN` names it; configures Toolgate
//! through the admin API (config as code, tenant keys). Then:
//!
//! 1. side by side: FastMCP's `echo` directly, through agentgateway and through Toolgate, in
//!    alternating rounds, with each process's CPU per call and the machine's;
//! 2. `tools/call` at concurrency 1 and 16 with rmcp clients and a raw HTTP/1.1 keep-alive
//!    client (Nagle left on, as most non-rmcp clients), each in both protocol eras: every HTTP
//!    upstream directly and through Toolgate back to back (so each ratio comes from one run),
//!    the upstreams only Toolgate reaches (legacy SSE, stdio), a built-in tool over MCP (also
//!    at c=256) and REST, and OpenAI-style batches over REST;
//! 3. `tools/list` for a tenant with 5,000 tools (as Toolgate sends it and as an rmcp client
//!    reads it), Toolgate's RSS, the time a configuration change takes to reach a second,
//!    `toolgate gateway` process;
//! 4. scale: thousands of idle listening streams in each era on a fresh `toolgate gateway`
//!    replica, their memory, and how long a `list_changed` made on `serve` takes to reach all
//!    of them;
//!
//! and prints Markdown tables and the performance issue's targets, met or not.
//!
//! Environment: `TOOLGATE_BIN` (the release binary), `DATABASE_URL`; optional
//! `BENCH_SECONDS` (per row, default 5), `BENCH_ROUNDS` (side by side, default 3),
//! `BENCH_STREAMS` (default 10,000), `TOOLGATE_PYTHON` and `TOOLGATE_PYTHON_MCP1` (Pythons with
//! the `mcp` package 2.x and 1.x; without them their upstreams are left out),
//! `AGENTGATEWAY_BIN`, `TOOLGATE_BASELINE_BIN` (another build of Toolgate, run side by side
//! too, for a before-and-after in one run), and `BENCH_ONLY` (run only the rows whose name contains it, for
//! profiling one at a time).

mod side_by_side;
mod targets;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use toolgate_bench::cpu::{Pids, Watch, postmaster};
use toolgate_bench::load::{Driver, GATEWAY, Load, MCP_DRIVERS, Measured, at, measure, mib, ms, us};
use toolgate_bench::peer::{agentgateway, python_script, python_sse_upstream, python_upstream};
use toolgate_bench::raw::{RawMcp, Revision};
use toolgate_bench::scale::Listeners;
use toolgate_bench::upstream::{self, MANY, Upstream};
use toolgate_bench::{ToolgateProcess, admin, admin_token, client, rss_mib, wait_for_tools};

use side_by_side::{Contender, POSTGRES};

/// An upstream measured directly and through Toolgate.
struct Pair<'a> {
    name: &'static str,
    direct_url: &'a str,
    /// The upstream's tool as Toolgate exposes it.
    through_tool: &'static str,
    drivers: &'static [Driver],
}

/// A row of the directly-and-through table.
struct PairRow {
    upstream: &'static str,
    driver: Driver,
    concurrency: usize,
    direct: Measured,
    through: Measured,
}

/// A row measured through Toolgate only.
struct OwnRow {
    name: &'static str,
    driver: Driver,
    concurrency: usize,
    measured: Measured,
}

/// The rows of scenario `name`: each of `drivers` at each of `concurrencies`, those whose
/// "name client c" contains `only` (`BENCH_ONLY`).
fn runs<'a>(
    drivers: &'a [Driver],
    concurrencies: &'a [usize],
    only: &'a str,
    name: &'a str,
) -> impl Iterator<Item = (Driver, usize)> + 'a {
    drivers
        .iter()
        .flat_map(move |d| concurrencies.iter().map(move |c| (*d, *c)))
        .filter(move |(d, c)| format!("{name} {} {c}", d.name()).contains(only))
}

/// The handshake-era drivers, for upstreams that know no other era.
const SESSION_DRIVERS: [Driver; 2] = [Driver::Rmcp(Revision::Handshake), Driver::Raw(Revision::Handshake)];

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// What thousands of idle listening streams in one era measured.
pub struct Streams {
    revision: Revision,
    open: usize,
    opened_in: Duration,
    kib_each: f64,
    /// How long after the admin change each stream heard of it, sorted.
    heard: Vec<Duration>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let bin = std::env::var("TOOLGATE_BIN").context("TOOLGATE_BIN names the release toolgate binary")?;
    let database_url = std::env::var("DATABASE_URL").context("DATABASE_URL names the benchmark's cluster")?;
    let seconds: f64 = env_or("BENCH_SECONDS", 5.0);
    let rounds: usize = env_or("BENCH_ROUNDS", 3).max(1);
    let stream_count: usize = env_or("BENCH_STREAMS", 10_000);
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let data = std::env::temp_dir().join(format!("toolgate-loadgen-{}", std::process::id()));
    std::fs::create_dir_all(&data)?;

    let rust_upstream = upstream::serve(Upstream::echo_and_add()).await?.url;
    let many = upstream::serve(Upstream::many()).await?.url;
    let python = std::env::var("TOOLGATE_PYTHON").ok();
    let python_mcp1 = std::env::var("TOOLGATE_PYTHON_MCP1").ok();
    if python.is_none() {
        eprintln!("TOOLGATE_PYTHON is not set: the Python upstreams and the side-by-side run are left out");
    }
    let fastmcp = match &python {
        Some(python) => Some(python_upstream(python).await?),
        None => None,
    };
    let fastmcp_sse = match &python {
        Some(python) => Some(python_sse_upstream(python).await?),
        None => None,
    };
    let fastmcp_1 = match &python_mcp1 {
        Some(python) => Some(python_upstream(python).await?),
        None => None,
    };
    // As deployed: the default log filter (an empty value leaves RUST_LOG unset); one key may
    // hold a session for each of the streams of the scale rows.
    let sessions = (stream_count + 1024).to_string();
    let env = [("RUST_LOG", ""), ("TOOLGATE_MCP_SESSIONS_PER_KEY", sessions.as_str())];
    let serve = ToolgateProcess::start_with_env(&bin, "serve", &data, None, &env)?;
    let pid = serve.pid();
    let token = admin_token(&bin, &data, "loadgen")?;
    let http = reqwest::Client::new();
    let server = |name: &str, transport: &str, url: &str| json!({"name": name, "transport": transport, "url": url, "tags": ["bench"]});
    let mut servers = vec![server("up", "streamable_http", &rust_upstream)];
    let mut tools = vec!["up_echo"];
    for (name, upstream, transport, tool) in [
        ("py", &fastmcp, "streamable_http", "py_echo"),
        ("sse", &fastmcp_sse, "sse", "sse_echo"),
        ("py1", &fastmcp_1, "streamable_http", "py1_echo"),
    ] {
        if let Some((_, url)) = upstream {
            servers.push(server(name, transport, url));
            tools.push(tool);
        }
    }
    if let Some(python) = &python {
        servers.push(json!({"name": "stdio", "transport": "stdio", "command": python,
                            "args": [python_script(), "stdio"], "tags": ["bench"]}));
        tools.push("stdio_echo");
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
    wait_for_tools(&endpoint, &key, |listed| tools.iter().all(|t| listed.iter().any(|l| l.name == *t))).await;
    wait_for_tools(&big_endpoint, &big_key, |listed| listed.len() >= MANY).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss = rss_mib(pid);

    // Every row counts Toolgate's PostgreSQL and the load driver; rows through Toolgate, Toolgate.
    let postgres = (POSTGRES, Pids::Tree(postmaster(&database_url).await?));
    let driver = ("driver", Pids::One(std::process::id()));
    let beside = Watch(vec![postgres, driver]);
    let through = Watch(vec![(GATEWAY, Pids::One(pid)), postgres, driver]);

    // 1. Side by side.
    let mut side = Vec::new();
    if let Some((upstream_process, fastmcp_url)) = &fastmcp
        && "side by side".contains(&only)
    {
        let peer = match std::env::var("AGENTGATEWAY_BIN") {
            Ok(peer) => Some(agentgateway(&peer, fastmcp_url, &data).await?),
            Err(_) => {
                eprintln!("AGENTGATEWAY_BIN is not set: the side-by-side run leaves agentgateway out");
                None
            }
        };
        // A second build of Toolgate on the same database, for a before-and-after in one run.
        let baseline = match std::env::var("TOOLGATE_BASELINE_BIN") {
            Ok(baseline) => {
                let process = ToolgateProcess::start_with_env(&baseline, "serve", &data, None, &env)?;
                let url = format!("{}/mcp/bench", process.url);
                wait_for_tools(&url, &key, |listed| listed.iter().any(|l| l.name == "py_echo")).await;
                Some((process, url))
            }
            Err(_) => None,
        };
        let mut contenders = vec![Contender {
            name: "FastMCP directly",
            url: fastmcp_url,
            key: None,
            tool: "echo",
            gateway: None,
        }];
        if let Some((process, url)) = &peer {
            contenders.push(Contender {
                name: "agentgateway",
                url,
                key: None,
                tool: "echo",
                gateway: Some(process.pid()),
            });
        }
        contenders.push(Contender {
            name: "Toolgate",
            url: &endpoint,
            key: Some(&key),
            tool: "py_echo",
            gateway: Some(pid),
        });
        if let Some(baseline) = &baseline {
            contenders.push(Contender {
                name: "Toolgate (baseline)",
                url: &baseline.1,
                key: Some(&key),
                tool: "py_echo",
                gateway: Some(baseline.0.pid()),
            });
        }
        let mut watch = beside.clone();
        watch.0.push(("upstream", Pids::One(upstream_process.pid())));
        side = side_by_side::run(&contenders, &watch, rounds, seconds).await?;
        side_by_side::print(&side, rounds, seconds);
    }

    // 2. Directly and through Toolgate, and through Toolgate only.
    let echo = json!({"message": "hello"});
    let mut pairs = vec![Pair {
        name: "Rust (rmcp)",
        direct_url: &rust_upstream,
        through_tool: "up_echo",
        drivers: &MCP_DRIVERS,
    }];
    if let Some((_, url)) = &fastmcp {
        pairs.push(Pair {
            name: "FastMCP (mcp 2)",
            direct_url: url,
            through_tool: "py_echo",
            drivers: &MCP_DRIVERS,
        });
    }
    if let Some((_, url)) = &fastmcp_1 {
        pairs.push(Pair {
            name: "FastMCP (mcp 1, handshake era)",
            direct_url: url,
            through_tool: "py1_echo",
            drivers: &SESSION_DRIVERS,
        });
    }
    let mut pair_rows = Vec::new();
    for pair in &pairs {
        for (driver, c) in runs(pair.drivers, &[1, 16], &only, pair.name) {
            eprintln!("measuring: {} directly and through Toolgate, {}, c={c}", pair.name, driver.name());
            let direct = Load { driver, url: pair.direct_url, key: None, tool: "echo", arguments: &echo };
            let direct = measure(&direct, c, seconds, &beside).await?;
            let load =
                Load { driver, url: &endpoint, key: Some(&key), tool: pair.through_tool, arguments: &echo };
            let through = measure(&load, c, seconds, &through).await?;
            pair_rows.push(PairRow { upstream: pair.name, driver, concurrency: c, direct, through });
        }
    }
    let builtin = json!({"path": ""});
    let raw_session = [Driver::Raw(Revision::Handshake)];
    let mut own = vec![
        ("built-in tool", MCP_DRIVERS.to_vec(), &[1, 16][..], "list_directory", &builtin, endpoint.as_str()),
        ("built-in tool", raw_session.to_vec(), &[256], "list_directory", &builtin, endpoint.as_str()),
        ("built-in tool", vec![Driver::Rest], &[1, 16], "list_directory", &builtin, serve.url.as_str()),
        ("Rust upstream", vec![Driver::RestBatch], &[1, 16], "up_echo", &echo, serve.url.as_str()),
    ];
    if fastmcp_sse.is_some() {
        own.push((
            "FastMCP, legacy SSE",
            raw_session.to_vec(),
            &[1, 16],
            "sse_echo",
            &echo,
            endpoint.as_str(),
        ));
    }
    if python.is_some() {
        own.push(("FastMCP, stdio", raw_session.to_vec(), &[1, 16], "stdio_echo", &echo, endpoint.as_str()));
    }
    let mut own_rows = Vec::new();
    for (name, drivers, concurrencies, tool, arguments, url) in own {
        for (driver, c) in runs(&drivers, concurrencies, &only, name) {
            eprintln!("measuring: {name} through Toolgate, {}, c={c}", driver.name());
            let load = Load { driver, url, key: Some(&key), tool, arguments };
            let measured = measure(&load, c, seconds, &through).await?;
            own_rows.push(OwnRow { name, driver, concurrency: c, measured });
        }
    }
    print_rows(&pair_rows, &own_rows);

    // 3. tools/list of 5,000 tools, memory, propagation to a replica.
    listings(&big_endpoint, &big_key).await?;
    let listing_rss = rss_mib(pid);
    println!(
        "\nToolgate RSS: {idle_rss:.1} MiB idle after configuration (the 5,000-tool tenant loaded), {listing_rss:.1} MiB after the listings"
    );
    let toggle = |i: usize| {
        // Untagged tools are always visible, so the upstreams' are tagged `bench`.
        let tags = if i.is_multiple_of(2) { json!(["files"]) } else { json!([]) };
        let (http, url, token) = (http.clone(), serve.url.clone(), token.clone());
        async move {
            let patch = json!({"enabled_tags": tags});
            admin(&http, &url, &token, reqwest::Method::PATCH, "/api/admin/v1/tenants/bench", patch).await
        }
    };
    let gateway = ToolgateProcess::start_with_env(&bin, "gateway", &data, None, &env)?;
    let replica = client(&format!("{}/mcp/bench", gateway.url), Some(&key), Revision::Handshake).await?;
    let mut samples = Vec::new();
    for i in 0..20 {
        let started = Instant::now();
        toggle(i).await?;
        let want_echo = i % 2 == 1;
        while replica.list_all_tools().await?.iter().any(|t| t.name == "up_echo") != want_echo {
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

    // 4. Thousands of idle listening streams, each era on a fresh `toolgate gateway` replica
    // (what one era's streams leave behind does not lower the next one's figure); the admin
    // change is made on `serve` and reaches the replica through PostgreSQL.
    let mut streams = Vec::new();
    for revision in [Revision::Handshake, Revision::Current] {
        if !format!("streams {revision:?}").contains(&only) {
            continue;
        }
        eprintln!("measuring: {stream_count} idle streams, {revision:?}");
        let replica = ToolgateProcess::start_with_env(&bin, "gateway", &data, None, &env)?;
        let replica_endpoint = format!("{}/mcp/bench", replica.url);
        wait_for_tools(&replica_endpoint, &key, |listed| !listed.is_empty()).await;
        let before = rss_mib(replica.pid());
        let started = Instant::now();
        let mut listeners = Listeners::open(&replica_endpoint, &key, revision, stream_count).await?;
        let opened_in = started.elapsed();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let kib_each = (rss_mib(replica.pid()) - before) * 1024.0 / listeners.len() as f64;
        let since = Instant::now();
        toggle(streams.len()).await?;
        let heard = listeners.heard_since(since, Duration::from_secs(10)).await;
        streams.push(Streams { revision, open: listeners.len(), opened_in, kib_each, heard });
    }
    print_streams(&streams);

    let targets = targets::judge(&targets::Run {
        side: &side,
        pairs: &pair_rows,
        own: &own_rows,
        rss_with_many_tools: idle_rss.max(listing_rss),
        streams: &streams,
    });
    targets::print(&targets);
    drop(serve);
    let _ = std::fs::remove_dir_all(&data);
    Ok(())
}

/// Toolgate's CPU per call, and PostgreSQL's for it.
fn cpu_columns(m: &Measured) -> (String, String) {
    (us(m.gateway_cpu()), us(m.cpu.of(POSTGRES).map(Duration::from_secs_f64)))
}

fn print_rows(pair_rows: &[PairRow], own_rows: &[OwnRow]) {
    println!("\n### An upstream directly and through Toolgate (back to back, same client)\n");
    println!(
        "| upstream | client | c | direct | through Toolgate | ratio | p50 direct | p50 through | p50 added | p99 through | Toolgate CPU/call | PostgreSQL CPU/call | Toolgate RSS max |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for row in pair_rows {
        let (d, t) = (&row.direct, &row.through);
        let (toolgate, postgres) = cpu_columns(t);
        println!(
            "| {} | {} | {} | {:.0}/s | {:.0}/s | {:.2}× | {} | {} | {} | {} | {toolgate} | {postgres} | {} |",
            row.upstream,
            row.driver.name(),
            row.concurrency,
            d.per_second,
            t.per_second,
            t.per_second / d.per_second,
            ms(d.p50),
            ms(t.p50),
            ms(t.p50.saturating_sub(d.p50)),
            ms(t.p99),
            mib(t.rss_mib),
        );
    }
    println!(
        "\n### Through Toolgate only: its own tools, REST, and upstreams clients cannot reach directly\n"
    );
    println!(
        "| calls | client | c | tool calls/s | p50 | p99 | Toolgate CPU/call | PostgreSQL CPU/call | Toolgate RSS max |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for row in own_rows {
        let m = &row.measured;
        let (toolgate, postgres) = cpu_columns(m);
        println!(
            "| {} | {} | {} | {:.0}/s | {} | {} | {toolgate} | {postgres} | {} |",
            row.name,
            row.driver.name(),
            row.concurrency,
            m.per_second,
            ms(m.p50),
            ms(m.p99),
            mib(m.rss_mib),
        );
    }
}

/// `tools/list` of the tenant with 5,000 tools: as Toolgate sends it (a raw client reading the
/// whole body, unparsed, in each era), and as an rmcp client reads it. Prints the table.
async fn listings(endpoint: &str, key: &str) -> Result<()> {
    let mut rows = Vec::new();
    for revision in [Revision::Handshake, Revision::Current] {
        let mut raw = RawMcp::connect_in(endpoint, Some(key), revision).await?;
        let mut samples = Vec::new();
        let mut bytes = 0;
        for _ in 0..50 {
            let started = Instant::now();
            bytes = raw.exchange("tools/list", json!({})).await?.len();
            samples.push(started.elapsed());
        }
        samples.sort();
        let era = if revision == Revision::Handshake { "session" } else { "2026-07-28" };
        rows.push(format!(
            "| sent by Toolgate (raw keep-alive client, {era}, body read, not parsed) | {} | {} | {:.2} MB |",
            ms(at(&samples, 0.5)),
            ms(at(&samples, 0.99)),
            bytes as f64 / 1e6
        ));
    }
    let lister = client(endpoint, Some(key), Revision::Handshake).await?;
    let mut parsed = Vec::new();
    let mut count = 0;
    for _ in 0..20 {
        let started = Instant::now();
        count = lister.list_all_tools().await?.len();
        parsed.push(started.elapsed());
    }
    lister.cancel().await.ok();
    parsed.sort();
    println!("\n### tools/list of a tenant with {count} tools\n");
    println!("| as | p50 | p99 | size |");
    println!("| --- | --- | --- | --- |");
    for row in rows {
        println!("{row}");
    }
    println!(
        "| read by an rmcp client (session, JSON parsed) | {} | {} | |",
        ms(at(&parsed, 0.5)),
        ms(at(&parsed, 0.99))
    );
    Ok(())
}

fn print_streams(streams: &[Streams]) {
    if streams.is_empty() {
        return;
    }
    println!("\n### Idle listening streams, each on its own keep-alive connection\n");
    println!(
        "| stream | opened | opened in | replica's RSS per stream | heard the change | fan-out p50 | p99 | last |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for s in streams {
        let kind = match s.revision {
            Revision::Handshake => "session's GET stream (handshake era)",
            Revision::Current => "`subscriptions/listen` (2026-07-28)",
        };
        let quantile = |q| if s.heard.is_empty() { "–".to_string() } else { ms(at(&s.heard, q)) };
        println!(
            "| {kind} | {} | {:.1} s | {:.1} KiB | {} | {} | {} | {} |",
            s.open,
            s.opened_in.as_secs_f64(),
            s.kib_each,
            s.heard.len(),
            quantile(0.5),
            quantile(0.99),
            quantile(1.0),
        );
    }
}
