//! Toolgate beside its peer: the same upstream (the Python SDK's FastMCP server, `echo`) and the
//! same driver (raw keep-alive clients, each in a session), directly, through agentgateway and
//! through Toolgate, in rounds that alternate between them; each figure is the median of the
//! rounds. Counts each process's CPU per call — the gateway's, PostgreSQL's (Toolgate's
//! invocation records), the upstream's, the driver's — and the whole machine's.

use std::time::Duration;

use anyhow::Result;
use serde_json::json;
use toolgate_bench::cpu::{PerCall, Pids, Watch};
use toolgate_bench::load::{Driver, GATEWAY, Load, Measured, measure, mib, ms};
use toolgate_bench::raw::Revision;

/// The driver of every row.
pub const DRIVER: Driver = Driver::Raw(Revision::Handshake);

/// The concurrencies each contender runs at.
const CONCURRENCY: [usize; 2] = [1, 16];

/// The process named in [`Watch`] for PostgreSQL.
pub const POSTGRES: &str = "PostgreSQL";

/// One way to reach the upstream's `echo`.
pub struct Contender<'a> {
    pub name: &'static str,
    pub url: &'a str,
    pub key: Option<&'a str>,
    pub tool: &'a str,
    /// The gateway's process, when there is one in the path.
    pub gateway: Option<u32>,
}

/// What a contender measured at each concurrency (medians of the rounds).
pub struct Row {
    pub name: &'static str,
    pub c1: Measured,
    pub c16: Measured,
}

/// Runs `rounds` rounds of `seconds` per contender and concurrency; `watch` names the processes
/// every row counts besides the gateway.
pub async fn run(
    contenders: &[Contender<'_>],
    watch: &Watch,
    rounds: usize,
    seconds: f64,
) -> Result<Vec<Row>> {
    let echo = json!({"message": "hello"});
    let mut samples: Vec<[Vec<Measured>; 2]> = contenders.iter().map(|_| Default::default()).collect();
    for round in 1..=rounds {
        for (i, c) in CONCURRENCY.iter().enumerate() {
            for (contender, samples) in contenders.iter().zip(&mut samples) {
                eprintln!("measuring: side by side, {}, c={c}, round {round} of {rounds}", contender.name);
                let mut watched = watch.clone();
                watched.0.extend(contender.gateway.map(|pid| (GATEWAY, Pids::One(pid))));
                let load = Load {
                    driver: DRIVER,
                    url: contender.url,
                    key: contender.key,
                    tool: contender.tool,
                    arguments: &echo,
                };
                samples[i].push(measure(&load, *c, seconds, &watched).await?);
            }
        }
    }
    Ok(contenders
        .iter()
        .zip(samples)
        .map(|(contender, [c1, c16])| Row { name: contender.name, c1: median(c1), c16: median(c16) })
        .collect())
}

/// The median of each figure of `rounds` (the upper one of an even number; the largest RSS).
fn median(rounds: Vec<Measured>) -> Measured {
    let mid = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let of = |f: &dyn Fn(&Measured) -> f64| mid(rounds.iter().map(f).collect());
    let secs = |f: &dyn Fn(&Measured) -> Duration| Duration::from_secs_f64(of(&|m| f(m).as_secs_f64()));
    let first = &rounds[0];
    let mut processes: Vec<_> = first
        .cpu
        .processes
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (*name, of(&|m| m.cpu.processes[i].1)))
        .collect();
    // Summed in each round, then the median: the rounds' medians of each would not add up.
    if first.cpu.of(GATEWAY).is_some() {
        let side = |m: &Measured| m.cpu.of(GATEWAY).unwrap_or(0.0) + m.cpu.of(POSTGRES).unwrap_or(0.0);
        processes.push((GATEWAY_SIDE, of(&side)));
    }
    Measured {
        per_second: of(&|m| m.per_second),
        p50: secs(&|m| m.p50),
        p99: secs(&|m| m.p99),
        cpu: PerCall { processes, machine: of(&|m| m.cpu.machine) },
        rss_mib: rounds.iter().filter_map(|m| m.rss_mib).reduce(f64::max),
    }
}

/// Microseconds of a share, or a dash.
fn micros(seconds: Option<f64>) -> String {
    seconds.map_or_else(|| "–".into(), |s| format!("{:.0}", s * 1e6))
}

/// The name of the gateway's CPU per call plus PostgreSQL's, in a row's medians.
const GATEWAY_SIDE: &str = "gateway with PostgreSQL";

/// The gateway's CPU per call plus PostgreSQL's (the median of their sums): what a call through
/// it costs the gateway's side of the machine.
pub fn gateway_side(m: &Measured) -> Option<f64> {
    m.cpu.of(GATEWAY_SIDE)
}

/// Prints the table; `rows[0]` is the upstream directly.
pub fn print(rows: &[Row], rounds: usize, seconds: f64) {
    println!(
        "\n### Side by side: FastMCP `echo` directly, through agentgateway and through Toolgate (raw keep-alive clients in a session; medians of {rounds} rounds of {seconds} s)\n"
    );
    println!(
        "| | p50 c=1 (added) | gateway CPU/call, µs, c=1 · c=16 | PostgreSQL CPU/call, µs, c=1 · c=16 | machine CPU/call, µs, c=16 (upstream · driver) | calls/s c=16 (× direct) | p99 c=16 | gateway RSS max |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let direct = &rows[0];
    for row in rows {
        let added = row.c1.p50.saturating_sub(direct.c1.p50);
        println!(
            "| {} | {} (+{}) | {} · {} | {} · {} | {} ({} · {}) | {:.0} ({:.2}×) | {} | {} |",
            row.name,
            ms(row.c1.p50),
            ms(added),
            micros(row.c1.cpu.of(GATEWAY)),
            micros(row.c16.cpu.of(GATEWAY)),
            micros(row.c1.cpu.of(POSTGRES)),
            micros(row.c16.cpu.of(POSTGRES)),
            micros(Some(row.c16.cpu.machine)),
            micros(row.c16.cpu.of("upstream")),
            micros(row.c16.cpu.of("driver")),
            row.c16.per_second,
            row.c16.per_second / direct.c16.per_second,
            ms(row.c16.p99),
            mib(row.c16.rss_mib),
        );
    }
}
