//! Running Toolgate processes, for the load benchmark and the multi-process tests, with what
//! both drive them with: a raw keep-alive MCP client ([`raw`]) and an rmcp upstream
//! ([`upstream`]); and what the benchmark measures with: load of many clients ([`load`]),
//! each process's CPU ([`cpu`]), the processes beside Toolgate ([`peer`]: the Python upstream,
//! agentgateway) and thousands of listening streams ([`scale`]).

pub mod cpu;
pub mod load;
pub mod peer;
pub mod raw;
pub mod scale;
pub mod upstream;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use raw::Revision;
use rmcp::model::{ProtocolVersion, Tool};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

/// A `toolgate` process (`serve` or `gateway`) on a loopback port, killed when dropped.
pub struct ToolgateProcess {
    child: Child,
    /// Where it listens: `http://127.0.0.1:<port>`.
    pub url: String,
    /// What it logged so far (standard error).
    log: Arc<Mutex<String>>,
}

impl Drop for ToolgateProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ToolgateProcess {
    /// Starts `bin command` with its files in `data_dir`, on `database_url` (else the
    /// process's own `DATABASE_URL`), and waits until it listens. Processes started here
    /// share one secret key, as replicas must.
    pub fn start(bin: &str, command: &str, data_dir: &Path, database_url: Option<&str>) -> Result<Self> {
        Self::start_with_env(bin, command, data_dir, database_url, &[])
    }

    /// The same, with the environment variables `env` besides (or instead of the ones set
    /// here: only warnings are logged unless `RUST_LOG` says otherwise); an empty value leaves
    /// a variable unset.
    pub fn start_with_env(
        bin: &str,
        command: &str,
        data_dir: &Path,
        database_url: Option<&str>,
        env: &[(&str, &str)],
    ) -> Result<Self> {
        let mut process = Command::new(bin);
        process
            .arg(command)
            .env("TOOLGATE_ADDR", "127.0.0.1:0")
            .env("TOOLGATE_DATA_DIR", data_dir)
            .env("TOOLGATE_SITE_ROOT", data_dir)
            .env("TOOLGATE_SECRET_KEY", "YmVuY2htYXJrLWtleS1ub3QtZm9yLXByb2R1Y3Rpb24=")
            .env("RUST_LOG", "warn,toolgate::startup=info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (name, value) in env {
            match value {
                &"" => process.env_remove(name),
                value => process.env(name, value),
            };
        }
        if let Some(url) = database_url {
            process.env("DATABASE_URL", url);
        }
        let mut child = process.spawn().with_context(|| format!("starting {bin} {command}"))?;
        let stderr = BufReader::new(child.stderr.take().expect("piped"));
        let (found, url) = std::sync::mpsc::channel();
        let log = Arc::new(Mutex::new(String::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(at) = line.find("url=http://") {
                    let _ =
                        found.send(line[at + 4..].split_whitespace().next().unwrap_or_default().to_string());
                }
                let mut log = kept.lock().expect("log");
                log.push_str(&line);
                log.push('\n');
            }
        });
        let url = url
            .recv_timeout(Duration::from_secs(60))
            .with_context(|| format!("`toolgate {command}` did not start"))?;
        Ok(ToolgateProcess { child, url, log })
    }

    /// What the process logged so far.
    pub fn log(&self) -> String {
        self.log.lock().expect("log").clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Asks the process to stop (SIGTERM), as a service manager does, and waits up to `within`
    /// for it to exit.
    pub fn terminate(&mut self, within: Duration) -> Result<std::process::ExitStatus> {
        let sent = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status()?;
        anyhow::ensure!(sent.success(), "kill -TERM failed");
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            anyhow::ensure!(std::time::Instant::now() < deadline, "still running {within:?} after SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Resident memory of a process, in MiB.
pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// An rmcp client of `url` on `revision`.
pub async fn client(
    url: &str,
    key: Option<&str>,
    revision: Revision,
) -> Result<RunningService<RoleClient, ()>> {
    let lifecycle = match revision {
        Revision::Handshake => ClientLifecycleMode::Initialize,
        Revision::Current => {
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
        }
    };
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(key) = key {
        config = config.auth_header(key.to_string());
    }
    Ok(().serve_with_lifecycle(StreamableHttpClientTransport::from_config(config), lifecycle).await?)
}

/// Waits until the tools at `endpoint` (listed with `key`) are `done`.
pub async fn wait_for_tools(endpoint: &str, key: &str, done: impl Fn(&[Tool]) -> bool) {
    loop {
        if let Ok(c) = client(endpoint, Some(key), Revision::Handshake).await {
            let ready = c.list_all_tools().await.is_ok_and(|tools| done(&tools));
            c.cancel().await.ok();
            if ready {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An admin API request with `token`: its JSON answer, or an error with the status and body.
pub async fn admin(
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

/// An admin token named `name`, made with `toolgate admin token create` on the data folder `data`.
pub fn admin_token(bin: &str, data: &Path, name: &str) -> Result<String> {
    let made = Command::new(bin)
        .args(["admin", "token", "create", "--name", name])
        .env("TOOLGATE_DATA_DIR", data)
        .output()?;
    Ok(String::from_utf8(made.stdout)?.lines().last().context("no admin token printed")?.to_string())
}
