//! `shell`: runs an allow-listed program with arguments passed as a list — never through a
//! shell, so nothing in an argument is interpreted — in the tenant's folder, with a cleared
//! environment, a timeout that kills it, and capped output. Each program has the flags it may
//! take; every other argument (and a flag's `=value`) is a path that must stay in the tenant's
//! folder.

use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;
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

/// The provider's source name (and tag).
pub const SOURCE: &str = crate::model::ceiling::SHELL;

impl ToolProvider for Shell {
    fn name(&self) -> &str {
        SOURCE
    }

    fn tags(&self) -> Vec<String> {
        vec![SOURCE.into()]
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(RunCommand(self.config.clone()))]
    }
}

/// A program `run_command` may start (by name, looked up on PATH) and the flags it may take,
/// written `program:-flag:--flag` (`ls:-l:-a`). A flag matches exactly, or up to its `=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramRule {
    pub program: String,
    pub flags: Vec<String>,
}

impl FromStr for ProgramRule {
    type Err = String;

    fn from_str(rule: &str) -> Result<Self, String> {
        let mut parts = rule.split(':').map(str::trim);
        let program = parts.next().unwrap_or_default().to_string();
        if program.is_empty() {
            return Err(format!("`{rule}`: name a program, then the flags it may take: `ls:-l:-a`"));
        }
        let flags: Vec<String> = parts.map(str::to_string).collect();
        if let Some(bad) = flags.iter().find(|flag| !flag.starts_with('-') || flag.contains('=')) {
            return Err(format!(
                "`{rule}`: `{bad}` is not a flag (a flag starts with `-` and has no `=value`)"
            ));
        }
        Ok(ProgramRule { program, flags })
    }
}

/// `items` joined for a message, or "none".
fn listed<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.into_iter().collect();
    if items.is_empty() { "none".to_string() } else { items.join(", ") }
}

/// Checks `args` against `rule`: a flag (`-x`, `--name`, `--name=value`; before a `--`) must
/// be one the rule lists; every other argument, and a flag's value, must name a path inside
/// `folder` (which is canonical), whether or not it exists.
fn check_args(rule: &ProgramRule, args: &[String], folder: &Path) -> Result<(), ToolError> {
    let mut flags_end = false;
    for arg in args {
        let operand = if flags_end || !arg.starts_with('-') || arg == "-" {
            Some(arg.as_str())
        } else if arg == "--" {
            flags_end = true;
            None
        } else {
            let (flag, value) = arg.split_once('=').map_or((arg.as_str(), None), |(f, v)| (f, Some(v)));
            if !rule.flags.iter().any(|allowed| allowed == flag) {
                return Err(ToolError::tool(format!(
                    "`{}` may not take the flag `{flag}` (allowed: {})",
                    rule.program,
                    listed(rule.flags.iter().map(String::as_str))
                )));
            }
            value
        };
        if let Some(operand) = operand {
            confined(operand, folder)?;
        }
    }
    Ok(())
}

/// Refuses an argument that names a path outside `folder`: absolute, with `..`, or through a
/// symlink that leads out (dangling ones included).
fn confined(arg: &str, folder: &Path) -> Result<(), ToolError> {
    let path = Path::new(arg);
    if path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(ToolError::tool(format!(
            "argument `{arg}`: absolute paths and `..` are not allowed; arguments name paths inside your folder"
        )));
    }
    let full = folder.join(path);
    let mut existing = full.as_path();
    while existing.symlink_metadata().is_err() {
        existing = existing.parent().unwrap_or(folder);
    }
    match existing.canonicalize() {
        Ok(real) if real.starts_with(folder) => Ok(()),
        _ => Err(ToolError::tool(format!("argument `{arg}` leads outside your folder (through a symlink)"))),
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

/// The tenant's folder, created on first use, canonical.
async fn tenant_folder(root: &Path, tenant: &str) -> Result<PathBuf, ToolError> {
    let dir = root.join(tenant);
    tokio::fs::create_dir_all(&dir).await.map_err(ToolError::internal)?;
    tokio::fs::canonicalize(&dir).await.map_err(ToolError::internal)
}

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
        let Some(rule) = config.shell_allow.iter().find(|rule| rule.program == args.program) else {
            return Err(ToolError::tool(format!(
                "program `{}` is not allowed (allowed: {})",
                args.program,
                listed(config.shell_allow.iter().map(|rule| rule.program.as_str()))
            )));
        };
        let dir = tenant_folder(&config.files_root, &ctx.tenant).await?;
        let (rule, checked, folder) = (rule.clone(), args.args.clone(), dir.clone());
        tokio::task::spawn_blocking(move || check_args(&rule, &checked, &folder))
            .await
            .map_err(ToolError::internal)??;
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
