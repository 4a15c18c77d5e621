//! `files`: list, view (by line range), write and insert into text files, confined to the
//! calling tenant's folder. Every path is opened relative to that folder with `cap-std`
//! (`openat2` with `RESOLVE_BENEATH` on Linux), so no path, `..` or symlink — dangling ones
//! included — leads outside it, between a check and a write or otherwise. Writes keep the
//! folder within its quota.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::tool::{Tool, ToolContext, ToolError, ToolOutput, ToolProvider, ToolResult, TypedTool};

/// The largest file `view_text_file` reads.
const MAX_READ_BYTES: u64 = 10 * 1024 * 1024;

pub struct Files {
    root: Root,
}

impl Files {
    /// Tenants' folders under `root`, each holding at most `quota` bytes.
    pub fn new(root: PathBuf, quota: u64) -> Self {
        Files { root: Root(Arc::new(RootState { base: root, quota, writers: Mutex::default() })) }
    }
}

impl ToolProvider for Files {
    fn name(&self) -> &str {
        "files"
    }

    fn tags(&self) -> Vec<String> {
        vec!["files".into()]
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let root = || self.root.clone();
        vec![
            Arc::new(ListDirectory(root())),
            Arc::new(ViewTextFile(root())),
            Arc::new(WriteTextFile(root())),
            Arc::new(InsertTextFile(root())),
        ]
    }
}

/// The base folder under which each tenant has its own.
#[derive(Clone)]
struct Root(Arc<RootState>);

struct RootState {
    base: PathBuf,
    quota: u64,
    /// One lock per tenant, held from the quota check to the end of the write.
    writers: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

fn io_error(path: &str, err: std::io::Error) -> ToolError {
    match err.kind() {
        std::io::ErrorKind::NotFound => ToolError::tool(format!("`{path}` does not exist")),
        std::io::ErrorKind::IsADirectory => ToolError::tool(format!("`{path}` is a directory")),
        std::io::ErrorKind::NotADirectory => ToolError::tool(format!("`{path}` is not a directory")),
        // cap-std's answer to any way out (a symlink, dangling or not, or `..` through one).
        std::io::ErrorKind::PermissionDenied => ToolError::tool(format!(
            "`{path}` leads outside your folder (through a symlink) or is not accessible"
        )),
        _ => ToolError::internal(format!("{path}: {err}")),
    }
}

/// Refuses what is never a path inside a folder, with a message saying why; an empty path is
/// the folder itself.
fn relative(path: &str) -> Result<&Path, ToolError> {
    let relative = Path::new(if path.is_empty() { "." } else { path });
    if relative.is_absolute() {
        return Err(ToolError::tool(format!(
            "`{path}`: absolute paths are not allowed; give a path inside your folder"
        )));
    }
    if relative.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(ToolError::tool(format!("`{path}`: `..` is not allowed")));
    }
    Ok(relative)
}

/// The bytes of the files under `dir`, symlinks not followed.
fn usage(dir: &Dir) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in dir.entries()? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            total += usage(&entry.open_dir()?)?;
        } else if kind.is_file() {
            total += entry.metadata()?.len();
        }
    }
    Ok(total)
}

impl Root {
    /// Runs `work` on a blocking thread with the tenant's folder (created on first use) and
    /// `path` checked as relative.
    async fn with_dir<T: Send + 'static>(
        &self,
        ctx: &ToolContext,
        path: &str,
        work: impl FnOnce(&Dir, &Path) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        let relative = relative(path)?.to_path_buf();
        let folder = self.0.base.join(&ctx.tenant);
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&folder).map_err(ToolError::internal)?;
            let dir = Dir::open_ambient_dir(&folder, ambient_authority()).map_err(ToolError::internal)?;
            work(&dir, &relative)
        })
        .await
        .map_err(ToolError::internal)?
    }

    /// Replaces the file at `path` with what `edit` makes of its current text (`None` when it
    /// does not exist), creating its folders, if the tenant's folder stays within its quota.
    async fn rewrite(
        &self,
        ctx: &ToolContext,
        path: &str,
        edit: impl FnOnce(Option<String>) -> Result<String, ToolError> + Send + 'static,
    ) -> Result<usize, ToolError> {
        let (state, shown) = (self.0.clone(), path.to_string());
        let writer = state.writers.lock().expect("writers").entry(ctx.tenant.clone()).or_default().clone();
        self.with_dir(ctx, path, move |dir, file| {
            let _one_writer = writer.lock().expect("writer");
            let old = match dir.read_to_string(file) {
                Ok(text) => Some(text),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
                Err(err) => return Err(io_error(&shown, err)),
            };
            let old_len = old.as_ref().map_or(0, |text| text.len() as u64);
            let text = edit(old)?;
            let after = usage(dir).map_err(ToolError::internal)?.saturating_sub(old_len) + text.len() as u64;
            if after > state.quota {
                return Err(ToolError::tool(format!(
                    "writing `{shown}` would put your folder at {after} bytes, over the folder's quota of {} bytes; \
                     remove or shorten files first",
                    state.quota
                )));
            }
            if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
                dir.create_dir_all(parent).map_err(|err| io_error(&shown, err))?;
            }
            dir.write(file, &text).map_err(|err| io_error(&shown, err))?;
            Ok(text.len())
        })
        .await
    }
}

fn default_dot() -> String {
    ".".into()
}

#[derive(Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Folder to list, relative to your folder.
    #[serde(default = "default_dot")]
    path: String,
}

struct ListDirectory(Root);

impl TypedTool for ListDirectory {
    type Args = ListArgs;
    const NAME: &'static str = "list_directory";
    const DESCRIPTION: &'static str = "List the files and folders in a folder.";

    fn annotations(&self) -> serde_json::Value {
        json!({"readOnlyHint": true})
    }

    async fn run(&self, args: ListArgs, ctx: &ToolContext) -> ToolResult {
        let shown = args.path.clone();
        let mut listing = self
            .0
            .with_dir(ctx, &args.path, move |dir, path| {
                let entries = dir.read_dir(path).map_err(|err| io_error(&shown, err))?;
                let mut listing = Vec::new();
                for entry in entries {
                    let entry = entry.map_err(ToolError::internal)?;
                    let meta = entry.metadata().map_err(ToolError::internal)?;
                    let kind = if meta.is_dir() {
                        "directory"
                    } else if meta.is_symlink() {
                        "symlink"
                    } else {
                        "file"
                    };
                    let name = entry.file_name().to_string_lossy().into_owned();
                    listing.push(json!({"name": name, "type": kind, "size": meta.len()}));
                }
                Ok(listing)
            })
            .await?;
        listing.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        Ok(ToolOutput::json(json!({"path": args.path, "entries": listing})))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct ViewArgs {
    /// File to read, relative to your folder.
    path: String,
    /// First line to show (1-based, default 1).
    start_line: Option<usize>,
    /// Last line to show (inclusive, default the last line).
    end_line: Option<usize>,
}

struct ViewTextFile(Root);

impl TypedTool for ViewTextFile {
    type Args = ViewArgs;
    const NAME: &'static str = "view_text_file";
    const DESCRIPTION: &'static str = "Show a text file's lines, numbered, optionally only a range of them.";

    fn annotations(&self) -> serde_json::Value {
        json!({"readOnlyHint": true})
    }

    async fn run(&self, args: ViewArgs, ctx: &ToolContext) -> ToolResult {
        let shown = args.path.clone();
        let text = self
            .0
            .with_dir(ctx, &args.path, move |dir, path| {
                let file = dir.open(path).map_err(|err| io_error(&shown, err))?;
                let size = file.metadata().map_err(|err| io_error(&shown, err))?.len();
                if size > MAX_READ_BYTES {
                    return Err(ToolError::tool(format!(
                        "`{shown}` is {size} bytes; view_text_file reads at most {MAX_READ_BYTES}"
                    )));
                }
                let mut bytes = Vec::new();
                file.take(MAX_READ_BYTES).read_to_end(&mut bytes).map_err(|err| io_error(&shown, err))?;
                String::from_utf8(bytes).map_err(|_| ToolError::tool(format!("`{shown}` is not UTF-8 text")))
            })
            .await?;
        let lines: Vec<&str> = text.lines().collect();
        let start = args.start_line.unwrap_or(1).max(1);
        let end = args.end_line.unwrap_or(lines.len()).min(lines.len());
        if start > end.max(1) || (lines.is_empty() && start > 1) {
            return Err(ToolError::tool(format!(
                "lines {start}-{end} are outside `{}`, which has {} lines",
                args.path,
                lines.len()
            )));
        }
        let shown: Vec<String> = (start..=end).map(|n| format!("{n}: {}", lines[n - 1])).collect();
        Ok(ToolOutput::text(shown.join("\n")))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// File to write, relative to your folder; created (with its folders) if missing.
    path: String,
    /// The new text.
    content: String,
    /// With end_line: the first line to replace (1-based) instead of the whole file.
    start_line: Option<usize>,
    /// With start_line: the last line to replace (inclusive).
    end_line: Option<usize>,
}

struct WriteTextFile(Root);

impl TypedTool for WriteTextFile {
    type Args = WriteArgs;
    const NAME: &'static str = "write_text_file";
    const DESCRIPTION: &'static str = "Create or overwrite a text file, or replace a range of its lines.";

    async fn run(&self, args: WriteArgs, ctx: &ToolContext) -> ToolResult {
        let (content, range, shown) = (args.content, (args.start_line, args.end_line), args.path.clone());
        let written = self
            .0
            .rewrite(ctx, &args.path, move |old| match range {
                (None, None) => Ok(content),
                (Some(start), Some(end)) if start >= 1 && start <= end => {
                    let old = old.ok_or_else(|| ToolError::tool(format!("`{shown}` does not exist")))?;
                    let mut lines: Vec<&str> = old.lines().collect();
                    if end > lines.len() {
                        return Err(ToolError::tool(format!(
                            "`{shown}` has {} lines; cannot replace up to line {end}",
                            lines.len()
                        )));
                    }
                    lines.splice(start - 1..end, content.lines());
                    Ok(lines.join("\n") + "\n")
                }
                _ => Err(ToolError::tool(
                    "give both start_line and end_line (1-based, start <= end), or neither",
                )),
            })
            .await?;
        Ok(ToolOutput::text(format!("wrote {written} bytes to `{}`", args.path)))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct InsertArgs {
    /// File to insert into, relative to your folder.
    path: String,
    /// The text to insert.
    content: String,
    /// Insert before this line (1-based); one past the last line appends.
    line: usize,
}

struct InsertTextFile(Root);

impl TypedTool for InsertTextFile {
    type Args = InsertArgs;
    const NAME: &'static str = "insert_text_file";
    const DESCRIPTION: &'static str = "Insert text into a file before the given line.";

    async fn run(&self, args: InsertArgs, ctx: &ToolContext) -> ToolResult {
        let (line, content, shown) = (args.line, args.content.clone(), args.path.clone());
        self.0
            .rewrite(ctx, &args.path, move |old| {
                let old = old.ok_or_else(|| ToolError::tool(format!("`{shown}` does not exist")))?;
                let mut lines: Vec<&str> = old.lines().collect();
                if line == 0 || line > lines.len() + 1 {
                    return Err(ToolError::tool(format!(
                        "line {line} is outside `{shown}` (1 to {})",
                        lines.len() + 1
                    )));
                }
                lines.splice(line - 1..line - 1, content.lines());
                Ok(lines.join("\n") + "\n")
            })
            .await?;
        Ok(ToolOutput::text(format!(
            "inserted {} line(s) into `{}` at line {}",
            args.content.lines().count(),
            args.path,
            args.line
        )))
    }
}
