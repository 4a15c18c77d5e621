//! Execution and rendering benchmarks (`make bench`).
//!
//! - per-call overhead: resolve + validate + dispatch + record of a local tool, end to end
//!   through `Executor::call` (the tool itself adds two integers);
//! - rendering + lint of 5,000 tools for one provider.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::catalog::{Catalog, CatalogOptions};
use engine::exec::{CallRequest, ExecConfig, Executor, Status};
use engine::model::TenantSlug;
use engine::schema::Provider;
use engine::schema::lint::lint;
use engine::schema::render::{ToolView, render};
use engine::secret::SecretBox;
use engine::store::{self, Actor};
use engine::tool::{Caller, Tool, ToolContext, ToolOutput, ToolProvider, ToolResult, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use common::{fresh_database, report};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

struct Add;

impl TypedTool for Add {
    type Args = AddArgs;
    const NAME: &'static str = "add";
    const DESCRIPTION: &'static str = "Add two integers.";
    async fn run(&self, args: AddArgs, _: &ToolContext) -> ToolResult {
        Ok(ToolOutput::text((args.a + args.b).to_string()))
    }
}

struct Bench;

impl ToolProvider for Bench {
    fn name(&self) -> &str {
        "bench"
    }
    fn tags(&self) -> Vec<String> {
        vec![]
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(Add)]
    }
}

async fn per_call_overhead() {
    let pool = fresh_database("bench_exec").await;
    let providers: Vec<Arc<dyn ToolProvider>> = vec![Arc::new(Bench)];
    engine::builtin::register(&pool, &providers).await.unwrap();
    store::tenants::create(&pool, &Actor::system(), &TenantSlug::parse("acme").unwrap(), "Acme")
        .await
        .unwrap();
    let catalog = Catalog::start(pool.clone(), CatalogOptions::default()).await.unwrap();
    let secrets = SecretBox::from_key(&[5; 32]).unwrap();
    let executor = Executor::new(catalog, pool, secrets, &providers, None, ExecConfig::default());
    let caller = Caller::Admin("bench".into());
    let mut samples = Vec::with_capacity(20_000);
    for i in 0..20_000 {
        let request = CallRequest { name: "add".into(), arguments: json!({"a": i, "b": 1}) };
        let started = Instant::now();
        let result = executor.call("acme", &caller, request, None).await.unwrap();
        samples.push(started.elapsed());
        assert_eq!(result.status, Status::Ok);
        if i % 5_000 == 0 {
            // Let the recorder drain, as it would between bursts.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    report("per-call overhead, local tool (resolve+validate+run)", samples);
}

fn render_and_lint_5000_tools() {
    let schemas: Vec<_> = (0..5000)
        .map(|i| {
            json!({
                "type": "object",
                "title": format!("Tool{i}"),
                "properties": {
                    "query": {"type": "string", "format": "uri", "description": "What to fetch"},
                    "limit": {"type": "integer", "default": 10, "minimum": 1},
                    "filter": {"$ref": "#/$defs/Filter"}
                },
                "required": ["query"],
                "$defs": {"Filter": {"type": "object", "properties": {"field": {"type": "string"}}}}
            })
        })
        .collect();
    let annotations = json!({});
    for provider in Provider::ALL {
        let mut samples = Vec::new();
        for _ in 0..5 {
            let started = Instant::now();
            for (i, schema) in schemas.iter().enumerate() {
                let name = format!("tool_{i}");
                let view = ToolView {
                    name: &name,
                    description: "d",
                    input_schema: schema,
                    output_schema: None,
                    annotations: &annotations,
                    meta: None,
                    strict: provider == Provider::OpenAi,
                };
                std::hint::black_box(lint(schema, provider, view.strict));
                std::hint::black_box(render(&view, provider).unwrap());
            }
            samples.push(started.elapsed());
        }
        report(&format!("render + lint of 5000 tools, {}", provider.as_str()), samples);
    }
}

#[tokio::main]
async fn main() {
    if !common::benchmarking() {
        return;
    }
    per_call_overhead().await;
    render_and_lint_5000_tools();
}
