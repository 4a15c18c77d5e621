//! Driving an MCP endpoint (or Toolgate's REST API) with a number of clients calling one tool
//! in a loop, and what a stretch of it measured: throughput, latency, the CPU it cost per call.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

use crate::cpu::{PerCall, Watch};
use crate::raw::{RawHttp, RawMcp, Revision};
use crate::{client, rss_mib};

/// How a scenario's clients talk to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// rmcp's client (reqwest; sets `TCP_NODELAY`): a session in the handshake era, none on
    /// 2026-07-28.
    Rmcp(Revision),
    /// One plain HTTP/1.1 keep-alive connection per client, Nagle left on.
    Raw(Revision),
    /// `POST /api/v1/tools/{name}/invoke` on a keep-alive connection.
    Rest,
    /// `POST /api/v1/tool_calls` with [`BATCH`] calls, on a keep-alive connection.
    RestBatch,
}

/// The MCP clients every MCP scenario runs with.
pub const MCP_DRIVERS: [Driver; 4] = [
    Driver::Rmcp(Revision::Handshake),
    Driver::Rmcp(Revision::Current),
    Driver::Raw(Revision::Handshake),
    Driver::Raw(Revision::Current),
];

/// Calls in one REST batch.
pub const BATCH: usize = 8;

impl Driver {
    pub fn name(self) -> &'static str {
        match self {
            Driver::Rmcp(Revision::Handshake) => "rmcp, session",
            Driver::Rmcp(Revision::Current) => "rmcp, 2026-07-28",
            Driver::Raw(Revision::Handshake) => "raw keep-alive, session",
            Driver::Raw(Revision::Current) => "raw keep-alive, 2026-07-28",
            Driver::Rest => "REST invoke, keep-alive",
            Driver::RestBatch => "REST batch of 8, keep-alive",
        }
    }

    /// Tool calls one request makes.
    pub fn calls(self) -> usize {
        if self == Driver::RestBatch { BATCH } else { 1 }
    }
}

/// One client of a scenario.
enum Client {
    Rmcp(RunningService<RoleClient, ()>),
    Raw(RawMcp),
    Rest(RawHttp),
}

impl Client {
    /// A client of the MCP endpoint `url`; for REST, of `url`'s host.
    async fn open(driver: Driver, url: &str, key: Option<&str>) -> Result<Self> {
        Ok(match driver {
            Driver::Rmcp(revision) => Client::Rmcp(client(url, key, revision).await?),
            Driver::Raw(revision) => Client::Raw(RawMcp::connect_in(url, key, revision).await?),
            Driver::Rest | Driver::RestBatch => Client::Rest(RawHttp::connect(url, key).await?.0),
        })
    }

    /// Calls `tool` (a batch of it, for `RestBatch`); a tool error is an error.
    async fn call(&mut self, driver: Driver, tool: &str, arguments: &Value) -> Result<()> {
        let failed = match self {
            Client::Rmcp(c) => {
                let params = CallToolRequestParams::new(tool.to_string())
                    .with_arguments(arguments.as_object().cloned().unwrap_or_default());
                c.call_tool(params).await?.is_error == Some(true)
            }
            Client::Raw(c) => c.call(tool, arguments).await?["isError"] == true,
            Client::Rest(c) if driver == Driver::Rest => {
                let path = format!("/api/v1/tools/{tool}/invoke");
                let (_, body) = c.post(&path, &[], &json!({"arguments": arguments})).await?;
                serde_json::from_slice::<Value>(&body)?["status"] != "ok"
            }
            Client::Rest(c) => {
                let call = |i: usize| {
                    json!({"id": format!("call_{i}"), "type": "function",
                           "function": {"name": tool, "arguments": arguments.to_string()}})
                };
                let batch = json!({"tool_calls": (0..BATCH).map(call).collect::<Vec<_>>()});
                let (_, body) = c.post("/api/v1/tool_calls", &[], &batch).await?;
                let answer: Value = serde_json::from_slice(&body)?;
                let results = answer["results"].as_array().context("no results")?;
                results.len() != BATCH || results.iter().any(|r| r["status"] != "ok")
            }
        };
        if failed {
            bail!("{tool} answered with a tool error");
        }
        Ok(())
    }

    async fn close(self) {
        match self {
            Client::Rmcp(c) => {
                c.cancel().await.ok();
            }
            Client::Raw(c) => {
                c.close().await.ok();
            }
            Client::Rest(_) => {}
        }
    }
}

/// What one stretch of load measured.
#[derive(Clone)]
pub struct Measured {
    /// Tool calls per second.
    pub per_second: f64,
    /// Of a request (a whole batch for `RestBatch`).
    pub p50: Duration,
    pub p99: Duration,
    /// The CPU each watched process, and the machine, spent per tool call.
    pub cpu: PerCall,
    /// The gateway's largest RSS during the stretch, when it is watched.
    pub rss_mib: Option<f64>,
}

impl Measured {
    /// The gateway's CPU time per tool call, when it is watched.
    pub fn gateway_cpu(&self) -> Option<Duration> {
        self.cpu.of(GATEWAY).map(Duration::from_secs_f64)
    }
}

/// The name [`measure`] gives the process in the path that is measured.
pub const GATEWAY: &str = "gateway";

/// What a stretch of load calls: `tool` with `arguments` at `url` (an MCP endpoint, or the REST
/// API's host), with `key`.
pub struct Load<'a> {
    pub driver: Driver,
    pub url: &'a str,
    pub key: Option<&'a str>,
    pub tool: &'a str,
    pub arguments: &'a Value,
}

/// `concurrency` clients make `load`'s call in a loop for `seconds`. `watch` names the processes
/// whose CPU is counted; the one named [`GATEWAY`] also has its RSS followed.
pub async fn measure(load: &Load<'_>, concurrency: usize, seconds: f64, watch: &Watch) -> Result<Measured> {
    let driver = load.driver;
    let mut clients = Vec::new();
    for _ in 0..concurrency {
        let mut c = Client::open(driver, load.url, load.key).await?;
        // Warm up each connection.
        for _ in 0..20 {
            c.call(driver, load.tool, load.arguments).await?;
        }
        clients.push(c);
    }
    let gateway = watch.0.iter().find(|(name, _)| *name == GATEWAY).map(|(_, pids)| pids.root());
    let before = watch.read();
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(seconds);
    let mut workers = Vec::new();
    for mut c in clients {
        let (tool, arguments) = (load.tool.to_string(), load.arguments.clone());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < until {
                let t = Instant::now();
                c.call(driver, &tool, &arguments).await?;
                latencies.push(t.elapsed());
            }
            anyhow::Ok((latencies, c))
        }));
    }
    let mut rss = gateway.map(rss_mib);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let (Some(pid), Some(max)) = (gateway, rss.as_mut()) {
            *max = max.max(rss_mib(pid));
        }
    }
    let (mut all, mut done) = (Vec::new(), Vec::new());
    for worker in workers {
        let (latencies, client) = worker.await??;
        all.extend(latencies);
        done.push(client);
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort();
    let calls = (all.len() * driver.calls()) as f64;
    // Read before the clients close, which is not the calls' work.
    let cpu = watch.per_call(&before, calls);
    for client in done {
        client.close().await;
    }
    Ok(Measured { per_second: calls / elapsed, p50: at(&all, 0.50), p99: at(&all, 0.99), cpu, rss_mib: rss })
}

/// The `q` quantile of sorted `samples`.
pub fn at(samples: &[Duration], q: f64) -> Duration {
    samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)]
}

pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

pub fn us(d: Option<Duration>) -> String {
    d.map(|d| format!("{:.0} µs", d.as_secs_f64() * 1e6)).unwrap_or_else(|| "—".into())
}

pub fn mib(rss: Option<f64>) -> String {
    rss.map(|r| format!("{r:.1} MiB")).unwrap_or_else(|| "—".into())
}
