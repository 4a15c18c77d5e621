//! Catalog benchmarks against a real PostgreSQL (`DATABASE_URL`; `make bench` provides a
//! private cluster). Each scenario gets a fresh database.
//!
//! - rebuild: load + build of a snapshot for 100 tenants x 1,000 tools;
//! - lookup: a tenant's visible set and a name resolution, for a tenant of 5,000 tools, and
//!   the heap its snapshot holds, and its tools rendered for MCP;
//! - propagation: commit-to-visible latency in a second catalog instance over 200 changes.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use engine::catalog::{Catalog, CatalogOptions};
use engine::model::{Name, SourceKind, Tag, TenantSlug};
use engine::schema::Provider;
use engine::secret::SecretBox;
use engine::store::overrides::OverrideInput;
use engine::store::sources::{NewSource, ToolDefinition};
use engine::store::tenants::TenantUpdate;
use engine::store::{self, Actor};
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use common::{fresh_database, report};

/// The system allocator, counting the bytes in use: what a structure holds is the count's
/// growth while it is built.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        IN_USE.fetch_add(new_size, Ordering::Relaxed);
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn in_use() -> usize {
    IN_USE.load(Ordering::Relaxed)
}

fn report_bytes(name: &str, bytes: usize) {
    println!("{name:<56} {:>10.1} MiB", bytes as f64 / (1024.0 * 1024.0));
}

fn tool(i: usize) -> ToolDefinition {
    ToolDefinition {
        upstream_name: format!("tool_{i:05}"),
        description: format!("Tool number {i}: does something useful with its arguments."),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for"},
                "limit": {"type": "integer", "description": "At most this many"},
                "apiKey": {"type": "string"}
            },
            "required": ["query"]
        }),
        output_schema: None,
        annotations: json!({"readOnlyHint": true}),
        tags: vec![["files", "search", "admin", "demo"][i % 4].to_string()],
        strict: false,
        timeout_ms: None,
        meta: None,
    }
}

async fn source_with_tools(pool: &PgPool, count: usize) -> Vec<Uuid> {
    let actor = Actor::system();
    let name = Name::parse("bench").unwrap();
    let new = NewSource {
        kind: SourceKind::Mcp,
        name: name.clone(),
        prefix: "bench".into(),
        tags: vec![],
        tenant: None,
    };
    store::sources::create(pool, &actor, &new).await.unwrap();
    let tools: Vec<ToolDefinition> = (0..count).map(tool).collect();
    store::sources::sync_tools(pool, &actor, &name, &tools).await.unwrap()
}

async fn rebuild_100_tenants_x_1000_tools() {
    let pool = fresh_database("bench_rebuild").await;
    let actor = Actor::system();
    let secrets = SecretBox::from_key(&[3; 32]).unwrap();
    let ids = source_with_tools(&pool, 1000).await;
    let group = Name::parse("admin-tools").unwrap();
    store::groups::write(&pool, &actor, &group, "", false, true).await.unwrap();
    store::groups::set_members(&pool, &actor, &group, &ids[..100]).await.unwrap();
    for t in 0..100 {
        let slug = TenantSlug::parse(&format!("tenant-{t}")).unwrap();
        store::tenants::create(&pool, &actor, &slug, "Bench tenant").await.unwrap();
        let tags = vec![Tag::parse("files").unwrap(), Tag::parse("search").unwrap()];
        let update = TenantUpdate { enabled_tags: Some(Some(tags)), ..Default::default() };
        store::tenants::update(&pool, &actor, &slug, update).await.unwrap();
        // Every tenant customises ten tools.
        for id in &ids[t * 10..t * 10 + 10] {
            let input = OverrideInput {
                presets: json!({"apiKey": "k"}).as_object().cloned().unwrap(),
                ..Default::default()
            };
            store::overrides::set(
                &pool,
                &secrets,
                &actor,
                &slug,
                *id,
                &input,
                engine::catalog::check_presets,
            )
            .await
            .unwrap();
        }
    }
    let mut samples = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let catalog = Catalog::start(pool.clone(), CatalogOptions::default()).await.unwrap();
        samples.push(started.elapsed());
        assert_eq!(catalog.snapshot().tenants().count(), 100);
    }
    report("rebuild (load + build), 100 tenants x 1000 tools", samples);
}

async fn lookup_in_a_tenant_of_5000_tools() {
    let pool = fresh_database("bench_lookup").await;
    source_with_tools(&pool, 5000).await;
    let slug = TenantSlug::parse("big").unwrap();
    store::tenants::create(&pool, &Actor::system(), &slug, "Big").await.unwrap();
    let before = in_use();
    let catalog = Catalog::start(pool.clone(), CatalogOptions::default()).await.unwrap();
    let snapshot = in_use() - before;
    assert_eq!(catalog.snapshot().tenant("big").unwrap().tools().len(), 5000);
    let before = in_use();
    let rendered: Vec<_> =
        catalog.snapshot().tenant("big").unwrap().tools().iter().map(|t| t.render(Provider::Mcp)).collect();
    let rendering = in_use() - before;
    drop(rendered);
    report_bytes("heap of a catalog with a tenant of 5000 tools", snapshot);
    report_bytes("heap of those 5000 tools rendered for MCP", rendering);

    let mut visible = Vec::new();
    let mut resolve = Vec::new();
    for i in 0..10_000 {
        let started = Instant::now();
        let snapshot = catalog.snapshot();
        let tools = snapshot.tenant("big").unwrap().tools();
        std::hint::black_box(tools.len());
        visible.push(started.elapsed());

        let name = format!("bench_tool_{:05}", i % 5000);
        let started = Instant::now();
        let snapshot = catalog.snapshot();
        std::hint::black_box(snapshot.tenant("big").unwrap().resolve(&name).unwrap());
        resolve.push(started.elapsed());
    }
    report("visible set of a tenant with 5000 tools", visible);
    report("resolve one exposed name among 5000", resolve);
}

async fn commit_to_visible_in_a_second_instance() {
    let pool = fresh_database("bench_propagation").await;
    let ids = source_with_tools(&pool, 100).await;
    let slug = TenantSlug::parse("acme").unwrap();
    store::tenants::create(&pool, &Actor::system(), &slug, "Acme").await.unwrap();
    let _writer = Catalog::start(pool.clone(), CatalogOptions::default()).await.unwrap();
    let observer = Catalog::start(pool.clone(), CatalogOptions::default()).await.unwrap();
    let secrets = SecretBox::from_key(&[3; 32]).unwrap();
    let mut versions = observer.versions();
    let mut samples = Vec::new();
    for i in 0..200 {
        let description = format!("change {i}");
        let input = OverrideInput { description: Some(description.clone()), ..Default::default() };
        store::overrides::set(
            &pool,
            &secrets,
            &Actor::system(),
            &slug,
            ids[0],
            &input,
            engine::catalog::check_presets,
        )
        .await
        .unwrap();
        let committed = Instant::now();
        loop {
            let snapshot = observer.snapshot();
            if snapshot.tenant("acme").unwrap().resolve("bench_tool_00000").unwrap().description
                == description
            {
                break;
            }
            tokio::time::timeout(Duration::from_secs(5), versions.changed()).await.unwrap().unwrap();
        }
        samples.push(committed.elapsed());
    }
    report("commit-to-visible in a second instance", samples);
}

#[tokio::main]
async fn main() {
    if !common::benchmarking() {
        return;
    }
    rebuild_100_tenants_x_1000_tools().await;
    lookup_in_a_tenant_of_5000_tools().await;
    commit_to_visible_in_a_second_instance().await;
}
