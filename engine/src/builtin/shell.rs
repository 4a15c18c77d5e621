//! `shell`: runs an allow-listed program with arguments passed as a list — never through a
//! shell, so nothing in an argument is interpreted — in the tenant's folder, with a cleared
//! environment, a timeout that kills it, and capped output.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::io::AsyncReadExt;

use super::BuiltinConfig;
use crate::tool::{Tool, ToolContext, ToolError, ToolOutput, ToolProvider, ToolResult, TypedTool};

pub struct Shell {
    config: Arc<BuiltinConfig>,
}

impl Shell {
    pub fn new(config: BuiltinConfig) -> Self {
        Shell { config: Arc::new(config) }
    }
}

impl ToolProvider for Shell {
    fn name(&self) -> &str {
        "shell"
    }

    fn tags(&self) -> Vec<String> {
        vec!["shell".into()]
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(RunCommand(self.config.clone()))]
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct RunArgs {
    /// The program to run (must be on the administrator's allow-list).
    program: String,
    /// Its arguments, one item each; no shell interprets them.
    #[serde(default)]
    args: Vec<String>,
    /// Seconds to allow (capped by the administrator's limit).
    timeout_seconds: Option<u64>,
}

struct RunCommand(Arc<BuiltinConfig>);

/// Reads at most `cap` bytes, then drains the rest so the program never blocks on a full pipe.
async fn read_capped(mut pipe: impl tokio::io::AsyncRead + Unpin, cap: usize) -> (String, bool) {
    let mut kept = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut truncated = false;
    while let Ok(n) = pipe.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..n.min(room)]);
        truncated |= n > room;
    }
    (String::from_utf8_lossy(&kept).into_owned(), truncated)
}

impl TypedTool for RunCommand {
    type Args = RunArgs;
    const NAME: &'static str = "run_command";
    const DESCRIPTION: &'static str =
        "Run an allowed program with arguments (no shell) and return its exit code and output.";

    fn annotations(&self) -> serde_json::Value {
        json!({"destructiveHint": true, "openWorldHint": true})
    }

    async fn run(&self, args: RunArgs, ctx: &ToolContext) -> ToolResult {
        let config = &self.0;
        if !config.shell_allow.contains(&args.program) {
            let allowed = if config.shell_allow.is_empty() {
                "none".to_string()
            } else {
                config.shell_allow.join(", ")
            };
            return Err(ToolError::tool(format!(
                "program `{}` is not allowed (allowed: {allowed})",
                args.program
            )));
        }
        let dir = config.files_root.join(&ctx.tenant);
        tokio::fs::create_dir_all(&dir).await.map_err(ToolError::internal)?;
        let timeout =
            args.timeout_seconds.map_or(config.shell_timeout, Duration::from_secs).min(config.shell_timeout);
        let mut child = tokio::process::Command::new(&args.program)
            .args(&args.args)
            .current_dir(&dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| ToolError::tool(format!("cannot start `{}`: {err}", args.program)))?;
        let stdout = read_capped(child.stdout.take().expect("piped"), config.shell_output_cap);
        let stderr = read_capped(child.stderr.take().expect("piped"), config.shell_output_cap);
        let finished =
            tokio::time::timeout(timeout, async { tokio::join!(child.wait(), stdout, stderr) }).await;
        let Ok((status, (stdout, out_cut), (stderr, err_cut))) = finished else {
            // Dropping `child` kills it.
            return Err(ToolError::tool(format!(
                "`{}` did not finish within {timeout:?} and was killed",
                args.program
            )));
        };
        let status = status.map_err(ToolError::internal)?;
        Ok(ToolOutput::json(json!({
            "exit_code": status.code(),
            "stdout": stdout,
            "stderr": stderr,
            "truncated": out_cut || err_cut,
        })))
    }
}
