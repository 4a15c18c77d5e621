//! The processes a benchmark runs beside Toolgate: the Python SDK's server as an upstream, and
//! agentgateway, the peer Toolgate is measured against (`make bench` builds it when its source
//! is present; see bench/README.md).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Result, bail};

use crate::raw::RawMcp;

/// A child process, killed when dropped.
pub struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Process {
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

/// A free loopback port.
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits until a client can open a session at `url`.
async fn wait_for_mcp(url: &str, what: &str) -> Result<()> {
    for _ in 0..200 {
        if RawMcp::connect(url, None).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("{what} did not answer at {url}")
}

/// The benchmark's Python upstream (`tools/python/mcpserver_upstream.py`: the Python SDK's
/// FastMCP server with `echo`).
pub fn python_script() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/python/mcpserver_upstream.py")
}

/// The Python upstream on streamable HTTP at a free loopback port, once it answers; `python` is
/// an interpreter with the `mcp` package (1.x or 2.x).
pub async fn python_upstream(python: &str) -> Result<(Process, String)> {
    let port = free_port()?;
    let child =
        Command::new(python).arg(python_script()).arg("streamable-http").arg(port.to_string()).spawn()?;
    let process = Process(child);
    let url = format!("http://127.0.0.1:{port}/mcp");
    wait_for_mcp(&url, "the Python upstream").await?;
    Ok((process, url))
}

/// The Python upstream on the legacy SSE transport: its SSE URL once it listens.
pub async fn python_sse_upstream(python: &str) -> Result<(Process, String)> {
    let port = free_port()?;
    let child = Command::new(python).arg(python_script()).arg("sse").arg(port.to_string()).spawn()?;
    let process = Process(child);
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok((process, format!("http://127.0.0.1:{port}/sse")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the Python SSE upstream did not listen on port {port}")
}

/// agentgateway (`bin`) with one MCP target, `upstream` (so tool names are not prefixed), no
/// authentication; its files in `dir`. Its MCP endpoint, once it answers.
pub async fn agentgateway(bin: &str, upstream: &str, dir: &Path) -> Result<(Process, String)> {
    let port = free_port()?;
    let config = format!(
        "binds:\n- port: {port}\n  listeners:\n  - routes:\n    - backends:\n      - mcp:\n          targets:\n          - name: echo\n            mcp:\n              host: {upstream}\n"
    );
    let file = dir.join("agentgateway.yaml");
    std::fs::write(&file, config)?;
    // Its admin, stats and readiness listeners on free ports rather than their fixed defaults.
    let addr = || free_port().map(|p| format!("127.0.0.1:{p}"));
    let child = Command::new(bin)
        .arg("-f")
        .arg(&file)
        .env("ADMIN_ADDR", addr()?)
        .env("STATS_ADDR", addr()?)
        .env("READINESS_ADDR", addr()?)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()?;
    let process = Process(child);
    let url = format!("http://127.0.0.1:{port}/mcp");
    wait_for_mcp(&url, "agentgateway").await?;
    Ok((process, url))
}
