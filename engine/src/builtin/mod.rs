//! Tools compiled into Toolgate: `files` (a per-tenant folder) and `shell` (allow-listed
//! programs, no shell). Each provider is registered as a `builtin` source tagged with its
//! name, so tenants switch them on and off with the tag whitelist like any other tools.

pub mod files;
pub mod shell;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;

use crate::model::{Name, SourceKind, Tag};
use crate::store::sources::{NewSource, ToolDefinition};
use crate::store::{self, Actor};
use crate::tool::ToolProvider;

#[derive(Debug, Clone)]
pub struct BuiltinConfig {
    /// Each tenant's files live in `<files_root>/<tenant slug>`.
    pub files_root: PathBuf,
    /// The most bytes one tenant's folder may hold (writes beyond are refused).
    pub files_quota: u64,
    /// Programs `run_command` may start, with the flags each may take.
    pub shell_allow: Vec<shell::ProgramRule>,
    /// The longest a command may run.
    pub shell_timeout: Duration,
    /// Bytes of stdout and of stderr kept.
    pub shell_output_cap: usize,
}

pub fn providers(config: &BuiltinConfig) -> Vec<Arc<dyn ToolProvider>> {
    vec![
        Arc::new(files::Files::new(config.files_root.clone(), config.files_quota)),
        Arc::new(shell::Shell::new(config.clone())),
    ]
}

/// Makes the catalog hold each provider's source and current tools. Writes (and audits)
/// only when something changed, so restarts leave no noise.
pub async fn register(pool: &PgPool, providers: &[Arc<dyn ToolProvider>]) -> store::Result<()> {
    let actor = Actor::system();
    for provider in providers {
        let name = Name::parse(provider.name())?;
        let definitions: Vec<ToolDefinition> = provider
            .tools()
            .iter()
            .map(|tool| {
                let spec = tool.spec();
                ToolDefinition {
                    upstream_name: spec.name,
                    description: spec.description,
                    input_schema: spec.input_schema,
                    output_schema: spec.output_schema,
                    annotations: spec.annotations,
                    tags: vec![],
                    strict: spec.strict,
                    timeout_ms: None,
                    meta: None,
                }
            })
            .collect();
        let stored = match store::sources::get(pool, &name).await {
            Ok(_) => store::sources::tool_hashes(pool, &name).await?,
            Err(store::Error::NotFound(_)) => {
                let tags = provider.tags().iter().map(|t| Tag::parse(t)).collect::<Result<_, _>>()?;
                let new = NewSource {
                    kind: SourceKind::Builtin,
                    name: name.clone(),
                    prefix: String::new(),
                    tags,
                    tenant: None,
                };
                store::sources::create(pool, &actor, &new).await?;
                HashMap::new()
            }
            Err(err) => return Err(err),
        };
        let current: HashMap<String, String> =
            definitions.iter().map(|d| (d.upstream_name.clone(), d.definition_hash())).collect();
        if current != stored {
            store::sources::sync_tools(pool, &actor, &name, &definitions).await?;
        }
    }
    Ok(())
}
