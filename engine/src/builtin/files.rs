//! `files`: list, view (by line range), write and insert into text files, confined to the
//! calling tenant's folder. Absolute paths, `..`, and symlinks that lead outside the folder
//! are refused with a clear error.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::tool::{Tool, ToolContext, ToolError, ToolOutput, ToolProvider, ToolResult, TypedTool};

/// The largest file `view_text_file` reads.
const MAX_READ_BYTES: u64 = 10 * 1024 * 1024;

pub struct Files {
    root: Arc<PathBuf>,
}

impl Files {
    pub fn new(root: PathBuf) -> Self {
        Files { root: Arc::new(root) }
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
        let root = || Root(self.root.clone());
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
struct Root(Arc<PathBuf>);

fn io_error(path: &str) -> impl Fn(std::io::Error) -> ToolError + '_ {
    move |err| match err.kind() {
        std::io::ErrorKind::NotFound => ToolError::tool(format!("`{path}` does not exist")),
        std::io::ErrorKind::IsADirectory => ToolError::tool(format!("`{path}` is a directory")),
        std::io::ErrorKind::NotADirectory => ToolError::tool(format!("`{path}` is not a directory")),
        _ => ToolError::internal(format!("{path}: {err}")),
    }
}

impl Root {
    /// The tenant's folder, created on first use.
    async fn tenant_dir(&self, ctx: &ToolContext) -> Result<PathBuf, ToolError> {
        let dir = self.0.join(&ctx.tenant);
        tokio::fs::create_dir_all(&dir).await.map_err(ToolError::internal)?;
        dir.canonicalize().map_err(ToolError::internal)
    }

    /// Resolves `path` inside the tenant's folder, refusing every way out.
    async fn resolve(&self, ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
        let relative = Path::new(path);
        if relative.is_absolute() {
            return Err(ToolError::tool(format!(
                "`{path}`: absolute paths are not allowed; give a path inside your folder"
            )));
        }
        if relative.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(ToolError::tool(format!("`{path}`: `..` is not allowed")));
        }
        let base = self.tenant_dir(ctx).await?;
        let full = base.join(relative);
        // The deepest part that exists, with every symlink followed, must stay inside.
        let mut existing = full.as_path();
        while !existing.exists() {
            existing = existing.parent().unwrap_or(&base);
        }
        let real = existing.canonicalize().map_err(io_error(path))?;
        if !real.starts_with(&base) {
            return Err(ToolError::tool(format!("`{path}` leads outside your folder (through a symlink)")));
        }
        Ok(full)
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
        let dir = self.0.resolve(ctx, &args.path).await?;
        let mut entries = tokio::fs::read_dir(&dir).await.map_err(io_error(&args.path))?;
        let mut listing = Vec::new();
        while let Some(entry) = entries.next_entry().await.map_err(ToolError::internal)? {
            let meta = entry.metadata().await.map_err(ToolError::internal)?;
            let kind = if meta.is_dir() {
                "directory"
            } else if meta.is_symlink() {
                "symlink"
            } else {
                "file"
            };
            listing
                .push(json!({"name": entry.file_name().to_string_lossy(), "type": kind, "size": meta.len()}));
        }
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
        let file = self.0.resolve(ctx, &args.path).await?;
        let size = tokio::fs::metadata(&file).await.map_err(io_error(&args.path))?.len();
        if size > MAX_READ_BYTES {
            return Err(ToolError::tool(format!(
                "`{}` is {size} bytes; view_text_file reads at most {MAX_READ_BYTES}",
                args.path
            )));
        }
        let bytes = tokio::fs::read(&file).await.map_err(io_error(&args.path))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| ToolError::tool(format!("`{}` is not UTF-8 text", args.path)))?;
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
    /// With end_line: replace only these lines (1-based, inclusive) instead of the whole file.
    start_line: Option<usize>,
    end_line: Option<usize>,
}

struct WriteTextFile(Root);

impl TypedTool for WriteTextFile {
    type Args = WriteArgs;
    const NAME: &'static str = "write_text_file";
    const DESCRIPTION: &'static str = "Create or overwrite a text file, or replace a range of its lines.";

    async fn run(&self, args: WriteArgs, ctx: &ToolContext) -> ToolResult {
        let file = self.0.resolve(ctx, &args.path).await?;
        let text = match (args.start_line, args.end_line) {
            (None, None) => args.content,
            (Some(start), Some(end)) if start >= 1 && start <= end => {
                let old = tokio::fs::read_to_string(&file).await.map_err(io_error(&args.path))?;
                let mut lines: Vec<&str> = old.lines().collect();
                if end > lines.len() {
                    return Err(ToolError::tool(format!(
                        "`{}` has {} lines; cannot replace up to line {end}",
                        args.path,
                        lines.len()
                    )));
                }
                lines.splice(start - 1..end, args.content.lines());
                lines.join("\n") + "\n"
            }
            _ => {
                return Err(ToolError::tool(
                    "give both start_line and end_line (1-based, start <= end), or neither",
                ));
            }
        };
        if let Some(parent) = file.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(io_error(&args.path))?;
        }
        tokio::fs::write(&file, &text).await.map_err(io_error(&args.path))?;
        Ok(ToolOutput::text(format!("wrote {} bytes to `{}`", text.len(), args.path)))
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
        let file = self.0.resolve(ctx, &args.path).await?;
        let old = tokio::fs::read_to_string(&file).await.map_err(io_error(&args.path))?;
        let mut lines: Vec<&str> = old.lines().collect();
        if args.line == 0 || args.line > lines.len() + 1 {
            return Err(ToolError::tool(format!(
                "line {} is outside `{}` (1 to {})",
                args.line,
                args.path,
                lines.len() + 1
            )));
        }
        let at = args.line - 1;
        lines.splice(at..at, args.content.lines());
        tokio::fs::write(&file, lines.join("\n") + "\n").await.map_err(io_error(&args.path))?;
        Ok(ToolOutput::text(format!(
            "inserted {} line(s) into `{}` at line {}",
            args.content.lines().count(),
            args.path,
            args.line
        )))
    }
}
