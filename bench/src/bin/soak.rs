//! `soak`: two Toolgate replicas (`serve` and a `gateway`) under a steady load for a long time
//! with a configuration change every minute, to show that nothing grows: every
//! `SOAK_SAMPLE_SECONDS` it samples each process's RSS, open file descriptors and sockets; at
//! the end it counts the invocation records written against the calls answered. Each replica
//! gets half the calls, half of those from an rmcp client (a session in the handshake era on
//! `serve`, none on 2026-07-28 on the gateway) and half over REST on a keep-alive connection.
//! The change turns the tenant's meta tool on or off, so both replicas rebuild their catalog
//! and tell their sessions the tool list changed. Prints Markdown tables.
//!
//! Environment: `TOOLGATE_BIN` (the release binary), `DATABASE_URL`; optional `SOAK_MINUTES`
//! (default 30), `SOAK_RATE` (calls a second across both replicas, default 40) and
//! `SOAK_SAMPLE_SECONDS` (default 60).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use toolgate_bench::raw::Revision;
use toolgate_bench::upstream::{self, Upstream};
use toolgate_bench::{ToolgateProcess, admin, admin_token, client, rss_mib, wait_for_tools};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// What one process holds open: file descriptors, and how many of them are sockets.
fn descriptors(pid: u32) -> (usize, usize) {
    let entries: Vec<_> =
        std::fs::read_dir(format!("/proc/{pid}/fd")).map(|dir| dir.flatten().collect()).unwrap_or_default();
    let sockets = entries
        .iter()
        .filter(|entry| {
            std::fs::read_link(entry.path()).is_ok_and(|to| to.to_string_lossy().starts_with("socket:"))
        })
        .count();
    (entries.len(), sockets)
}

/// One sample of one process.
#[derive(Clone, Copy)]
struct Sample {
    rss: f64,
    fds: usize,
    sockets: usize,
}

impl Sample {
    fn of(pid: u32) -> Self {
        let (fds, sockets) = descriptors(pid);
        Sample { rss: rss_mib(pid), fds, sockets }
    }
}

/// How a worker calls.
#[derive(Clone, Copy)]
enum Way {
    Mcp(Revision),
    Rest,
}

#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    failed: AtomicU64,
}

/// Calls `up_echo` at `url` `per_second` times a second until `running` is cleared.
async fn worker(
    url: String,
    key: String,
    way: Way,
    per_second: f64,
    running: Arc<AtomicBool>,
    tally: Arc<Tally>,
) -> Result<()> {
    let mut every = tokio::time::interval(Duration::from_secs_f64(1.0 / per_second));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let arguments = json!({"message": "soak"});
    let mcp = match way {
        Way::Mcp(revision) => Some(client(&format!("{url}/mcp/soak"), Some(&key), revision).await?),
        Way::Rest => None,
    };
    let http = reqwest::Client::new();
    while running.load(Ordering::Relaxed) {
        every.tick().await;
        let ok = match &mcp {
            Some(mcp) => {
                let params = CallToolRequestParams::new("up_echo")
                    .with_arguments(arguments.as_object().cloned().unwrap_or_default());
                mcp.call_tool(params).await.is_ok_and(|result| result.is_error != Some(true))
            }
            None => {
                let request = http.post(format!("{url}/api/v1/tools/up_echo/invoke")).bearer_auth(&key);
                match request.json(&json!({"arguments": arguments})).send().await {
                    Ok(response) => {
                        response.json::<serde_json::Value>().await.is_ok_and(|body| body["status"] == "ok")
                    }
                    Err(_) => false,
                }
            }
        };
        let counter = if ok { &tally.ok } else { &tally.failed };
        counter.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(mcp) = mcp {
        mcp.cancel().await.ok();
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let bin = std::env::var("TOOLGATE_BIN").context("TOOLGATE_BIN names the release toolgate binary")?;
    let database = std::env::var("DATABASE_URL").context("DATABASE_URL names the database")?;
    let minutes = setting("SOAK_MINUTES", 30);
    let rate = setting("SOAK_RATE", 40) as f64;
    let sample_every = Duration::from_secs(setting("SOAK_SAMPLE_SECONDS", 60));
    let data = std::env::temp_dir().join(format!("toolgate-soak-{}", std::process::id()));
    std::fs::create_dir_all(&data)?;

    let echo = upstream::serve(Upstream::echo_and_add()).await?.url;
    let serve = ToolgateProcess::start_with_env(&bin, "serve", &data, None, &[("RUST_LOG", "")])?;
    let token = admin_token(&bin, &data, "soak")?;
    let http = reqwest::Client::new();
    let document = json!({
        "servers": [{"name": "up", "transport": "streamable_http", "url": echo, "tags": ["soak"]}],
        "tenants": [{"slug": "soak", "name": "Soak", "enabled_tags": []}]
    });
    admin(&http, &serve.url, &token, reqwest::Method::PUT, "/api/admin/v1/config", document).await?;
    let created = admin(
        &http,
        &serve.url,
        &token,
        reqwest::Method::POST,
        "/api/admin/v1/tenants/soak/keys",
        json!({"name": "soak"}),
    )
    .await?;
    let key = created["key"].as_str().context("no key")?.to_string();
    let gateway = ToolgateProcess::start_with_env(&bin, "gateway", &data, None, &[("RUST_LOG", "")])?;
    for process in [&serve, &gateway] {
        wait_for_tools(&format!("{}/mcp/soak", process.url), &key, |tools| {
            tools.iter().any(|t| t.name == "up_echo")
        })
        .await;
    }
    let pool = sqlx::PgPool::connect(&database).await?;
    let records =
        || async { sqlx::query_scalar::<_, i64>("select count(*) from invocation").fetch_one(&pool).await };
    let before = records().await?;

    let running = Arc::new(AtomicBool::new(true));
    let tally = Arc::new(Tally::default());
    let ways = [
        (&serve.url, Way::Mcp(Revision::Handshake)),
        (&serve.url, Way::Rest),
        (&gateway.url, Way::Mcp(Revision::Current)),
        (&gateway.url, Way::Rest),
    ];
    let workers: Vec<_> = ways
        .iter()
        .map(|(url, way)| {
            let task = worker(
                url.to_string(),
                key.clone(),
                *way,
                rate / ways.len() as f64,
                running.clone(),
                tally.clone(),
            );
            tokio::spawn(task)
        })
        .collect();

    eprintln!("soak: {minutes} min at {rate} calls/s across two replicas");
    println!(
        "\n### Soak: {minutes} min, {rate:.0} calls/s across `serve` and a `gateway`, a change every minute\n"
    );
    println!(
        "| minute | calls answered | failed | serve RSS | serve fds / sockets | gateway RSS | gateway fds / sockets |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let (pids, started) = ([serve.pid(), gateway.pid()], Instant::now());
    let end = started + Duration::from_secs(minutes * 60);
    let (mut next_sample, mut next_change, mut changes) = (started, started + Duration::from_secs(60), 0);
    let mut samples: Vec<[Sample; 2]> = Vec::new();
    while Instant::now() < end {
        if Instant::now() >= next_sample {
            let sample = pids.map(Sample::of);
            println!(
                "| {:.1} | {} | {} | {:.1} MiB | {} / {} | {:.1} MiB | {} / {} |",
                started.elapsed().as_secs_f64() / 60.0,
                tally.ok.load(Ordering::Relaxed),
                tally.failed.load(Ordering::Relaxed),
                sample[0].rss,
                sample[0].fds,
                sample[0].sockets,
                sample[1].rss,
                sample[1].fds,
                sample[1].sockets,
            );
            samples.push(sample);
            next_sample += sample_every;
        }
        if Instant::now() >= next_change {
            changes += 1;
            let change = json!({"meta_tool": changes % 2 == 1});
            admin(&http, &serve.url, &token, reqwest::Method::PATCH, "/api/admin/v1/tenants/soak", change)
                .await?;
            next_change += Duration::from_secs(60);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    running.store(false, Ordering::Relaxed);
    for task in workers {
        task.await??;
    }
    let (ok, failed) = (tally.ok.load(Ordering::Relaxed), tally.failed.load(Ordering::Relaxed));
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut written = records().await? - before;
    while written < ok as i64 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        written = records().await? - before;
    }
    let last = pids.map(Sample::of);
    println!("\n| | serve | gateway |\n| --- | --- | --- |");
    let first = samples.first().copied().unwrap_or(last);
    let peak = |i: usize| samples.iter().map(|s| s[i].rss).fold(last[i].rss, f64::max);
    println!(
        "| RSS first → last (peak) | {:.1} → {:.1} MiB ({:.1}) | {:.1} → {:.1} MiB ({:.1}) |",
        first[0].rss,
        last[0].rss,
        peak(0),
        first[1].rss,
        last[1].rss,
        peak(1)
    );
    println!(
        "| file descriptors first → last | {} → {} | {} → {} |",
        first[0].fds, last[0].fds, first[1].fds, last[1].fds
    );
    println!(
        "| sockets first → last | {} → {} | {} → {} |",
        first[0].sockets, last[0].sockets, first[1].sockets, last[1].sockets
    );
    println!(
        "\nCalls answered: {ok}, failed: {failed}; invocation records written: {written}; configuration changes: {changes}."
    );
    if failed > 0 || written != ok as i64 {
        bail!("the soak lost calls or records: {failed} failed, {written} records for {ok} calls");
    }
    Ok(())
}
