//! The performance issue's targets, judged on one run's rows.

use toolgate_bench::load::{Driver, GATEWAY, Measured};
use toolgate_bench::raw::Revision;

use crate::side_by_side::{Row, gateway_side};
use crate::{OwnRow, PairRow, Streams};

/// What one run measured.
pub struct Run<'a> {
    pub side: &'a [Row],
    pub pairs: &'a [PairRow],
    pub own: &'a [OwnRow],
    pub rss_with_many_tools: f64,
    pub streams: &'a [Streams],
}

/// One target, and how this run measured against it.
pub struct Target {
    what: &'static str,
    measured: String,
    met: bool,
}

/// Milliseconds, three decimals, so a bound missed by less than a hundredth does not read as met.
fn millis(seconds: f64) -> String {
    format!("{:.3} ms", seconds * 1000.0)
}

/// How `values` range, and the highest.
fn range(values: &[f64], show: impl Fn(f64) -> String) -> (String, f64) {
    let (low, high) = values.iter().fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
    (format!("{}–{} over {} rows", show(low), show(high), values.len()), high)
}

pub fn judge(run: &Run) -> Vec<Target> {
    let mut targets = Vec::new();
    let row = |name: &str| run.side.iter().find(|r| r.name == name);
    if let (Some(direct), Some(peer), Some(toolgate)) =
        (row("FastMCP directly"), row("agentgateway"), row("Toolgate"))
    {
        let cpu = |m: &Measured, of: &dyn Fn(&Measured) -> Option<f64>| of(m).unwrap_or(f64::NAN);
        let peer_cpu = |m: &Measured| m.cpu.of(GATEWAY);
        for (c, t, p) in [(1, &toolgate.c1, &peer.c1), (16, &toolgate.c16, &peer.c16)] {
            let (ours, theirs) = (cpu(t, &gateway_side), cpu(p, &peer_cpu));
            targets.push(Target {
                what: if c == 1 {
                    "CPU per proxied call, Toolgate's with PostgreSQL's, ≤ 0.8× agentgateway's, c=1"
                } else {
                    "the same at c=16"
                },
                measured: format!("{} vs {} ({:.2}×)", millis(ours), millis(theirs), ours / theirs),
                met: ours <= 0.8 * theirs,
            });
        }
        let added = |m: &Measured| m.p50.saturating_sub(direct.c1.p50).as_secs_f64();
        let (ours, theirs) = (added(&toolgate.c1), added(&peer.c1));
        targets.push(Target {
            what: "added p50 at c=1 ≤ agentgateway's",
            measured: format!("+{} vs +{}", millis(ours), millis(theirs)),
            met: ours <= theirs,
        });
        let (ours, theirs) = (toolgate.c16.per_second, peer.c16.per_second);
        targets.push(Target {
            what: "throughput at c=16 ≥ agentgateway's",
            measured: format!("{ours:.0}/s vs {theirs:.0}/s"),
            met: ours >= theirs,
        });
    }
    let mut proxied: Vec<f64> = run.pairs.iter().filter_map(|r| r.through.cpu.of(GATEWAY)).collect();
    proxied
        .extend(row("Toolgate").into_iter().flat_map(|r| [&r.c1, &r.c16]).filter_map(|m| m.cpu.of(GATEWAY)));
    if !proxied.is_empty() {
        let (measured, high) = range(&proxied, millis);
        targets
            .push(Target { what: "proxied call ≤ 0.15 ms Toolgate CPU", measured, met: high <= 0.15e-3 });
    }
    let builtin: Vec<&OwnRow> = run
        .own
        .iter()
        .filter(|r| r.name == "built-in tool" && matches!(r.driver, Driver::Rmcp(_) | Driver::Raw(_)))
        .collect();
    let at_16: Vec<&&OwnRow> = builtin.iter().filter(|r| r.concurrency == 16).collect();
    let cpu: Vec<f64> = at_16.iter().filter_map(|r| r.measured.cpu.of(GATEWAY)).collect();
    if !cpu.is_empty() {
        let (measured, high) = range(&cpu, millis);
        targets.push(Target {
            what: "built-in tool over MCP ≤ 0.04 ms CPU, c=16",
            measured,
            met: high <= 0.04e-3,
        });
    }
    if let Some(best) = at_16.iter().max_by(|a, b| a.measured.per_second.total_cmp(&b.measured.per_second)) {
        targets.push(Target {
            what: "built-in tool over MCP ≥ 25,000 calls/s at c=16",
            measured: format!("{:.0}/s ({})", best.measured.per_second, best.driver.name()),
            met: best.measured.per_second >= 25_000.0,
        });
    }
    let mut added: Vec<f64> = run
        .pairs
        .iter()
        .filter(|r| r.upstream.starts_with("FastMCP") && r.concurrency == 1)
        .map(|r| r.through.p50.saturating_sub(r.direct.p50).as_secs_f64())
        .collect();
    if let (Some(direct), Some(toolgate)) = (row("FastMCP directly"), row("Toolgate")) {
        added.push(toolgate.c1.p50.saturating_sub(direct.c1.p50).as_secs_f64());
    }
    if !added.is_empty() {
        let (measured, high) = range(&added, millis);
        targets.push(Target {
            what: "added p50 ≤ 0.25 ms over FastMCP, c=1",
            measured,
            met: high <= 0.25e-3,
        });
    }
    targets.push(Target {
        what: "RSS with a 5,000-tool tenant ≤ 50 MiB",
        measured: format!("{:.1} MiB", run.rss_with_many_tools),
        met: run.rss_with_many_tools <= 50.0,
    });
    for s in run.streams {
        targets.push(Target {
            what: "≤ 8 KiB per idle stream",
            measured: format!("{:.1} KiB ({:?})", s.kib_each, s.revision),
            met: s.kib_each <= 8.0,
        });
        let last = s.heard.last().map_or(f64::NAN, |d| d.as_secs_f64());
        targets.push(Target {
            what: "fan-out of a list_changed to 10,000 streams ≤ 1 s",
            measured: format!(
                "{} of {} heard, the last after {} ({:?})",
                s.heard.len(),
                s.open,
                millis(last),
                s.revision
            ),
            met: s.open >= 10_000 && s.heard.len() == s.open && last <= 1.0,
        });
    }
    let at = |c| {
        run.own.iter().find(|r| {
            r.name == "built-in tool" && r.driver == Driver::Raw(Revision::Handshake) && r.concurrency == c
        })
    };
    if let (Some(c16), Some(c256)) = (at(16), at(256)) {
        let ratio = c256.measured.per_second / c16.measured.per_second;
        targets.push(Target {
            what: "c=256 keep-alive clients: no errors, throughput within 10 % of c=16",
            measured: format!(
                "{:.0}/s vs {:.0}/s ({ratio:.2}×), no errors",
                c256.measured.per_second, c16.measured.per_second
            ),
            met: ratio >= 0.9,
        });
    }
    targets
}

pub fn print(targets: &[Target]) {
    println!("\n### Targets\n");
    println!("| target | measured in this run | |");
    println!("| --- | --- | --- |");
    for t in targets {
        println!("| {} | {} | {} |", t.what, t.measured, if t.met { "met" } else { "**not met**" });
    }
}
