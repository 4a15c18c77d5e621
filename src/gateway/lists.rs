//! The tenants' tool lists as the gateway serves them, rendered once per catalog version.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Bytes;
use engine::schema::Provider;
use engine::service::catalog::{Catalog, CatalogTool};

/// Each tenant's tools rendered in one form, converted to `T` and serialised, kept for one
/// snapshot version: listing tools costs a lookup and a copy of bytes, not a rendering, until
/// the configuration changes. Only the bytes are kept (the rendered values cost several times
/// their size).
pub struct RenderCache<T> {
    form: Form,
    convert: fn(serde_json::Value) -> Option<T>,
    entries: Mutex<HashMap<String, Arc<Rendered>>>,
    kept: Mutex<KeptTools<T>>,
}

/// Single tools' renderings, for lists made per request ([`RenderCache::render_kept`]), by the
/// tool's address: an entry holds its tool, so the address names no other while it is kept.
struct KeptTools<T> {
    by_tool: HashMap<usize, (Arc<CatalogTool>, Option<T>)>,
    /// How many were left at the last sweep.
    swept: usize,
}

/// The size of a serialised tool list whose rendering freed enough memory to return it to the
/// system: the rendered values of 5,000 tools took 16 times their 1.4 MB of JSON.
const BIG_LIST: usize = 1 << 20;

/// A tenant's serialised tool lists for one snapshot version: one per form a surface serves
/// them in (the MCP endpoint's protocol eras; the REST API's one list), each made on first use.
struct Rendered {
    version: u64,
    bodies: [OnceLock<Bytes>; 2],
}

/// What a [`RenderCache`] renders tools as.
#[derive(Debug, Clone, Copy)]
enum Form {
    /// A provider's normalised rendering.
    Normalised(Provider),
    /// MCP's listing with the schemas as published.
    PublishedMcp,
}

impl<T> RenderCache<T> {
    /// Renders tools as `provider` receives them, normalised.
    pub fn new(provider: Provider, convert: fn(serde_json::Value) -> Option<T>) -> Self {
        Self::of(Form::Normalised(provider), convert)
    }

    /// Renders tools as MCP lists them with their schemas as published.
    pub fn published_mcp(convert: fn(serde_json::Value) -> Option<T>) -> Self {
        Self::of(Form::PublishedMcp, convert)
    }

    fn of(form: Form, convert: fn(serde_json::Value) -> Option<T>) -> Self {
        RenderCache {
            form,
            convert,
            entries: Mutex::default(),
            kept: Mutex::new(KeptTools { by_tool: HashMap::new(), swept: 0 }),
        }
    }

    /// Renders `tools`, leaving out (with a warning) any that cannot be rendered.
    pub fn render(&self, tools: &[Arc<CatalogTool>]) -> Vec<T> {
        tools
            .iter()
            .filter_map(|tool| {
                let rendered = match self.form {
                    Form::Normalised(provider) => tool.render(provider),
                    Form::PublishedMcp => Ok(tool.published_mcp()),
                };
                match rendered {
                    Ok(rendered) => (self.convert)(rendered),
                    Err(err) => {
                        tracing::warn!(tool = %tool.exposed_name, form = ?self.form, error = %err, "tool not served");
                        None
                    }
                }
            })
            .collect()
    }

    /// Renders `tools` as [`RenderCache::render`] does, each tool once for as long as it lives:
    /// for the lists a session makes its own (its equipped groups, or with the meta tool),
    /// which are not the tenant's list and would otherwise be rendered at every request.
    pub fn render_kept(&self, tools: &[Arc<CatalogTool>]) -> Vec<T>
    where
        T: Clone,
    {
        let key = |tool: &Arc<CatalogTool>| Arc::as_ptr(tool) as usize;
        let missing: Vec<&Arc<CatalogTool>> = {
            let kept = self.kept.lock().expect("kept renderings");
            tools.iter().filter(|tool| !kept.by_tool.contains_key(&key(tool))).collect()
        };
        // Rendered outside the lock: other sessions' lists do not wait for these.
        let fresh: Vec<_> = missing
            .into_iter()
            .map(|tool| (key(tool), (tool.clone(), self.render(std::slice::from_ref(tool)).pop())))
            .collect();
        let mut kept = self.kept.lock().expect("kept renderings");
        kept.by_tool.extend(fresh);
        // Every one of `tools` is there: a sweep drops only tools nothing else holds.
        let rendered = tools.iter().filter_map(|tool| kept.by_tool.get(&key(tool))?.1.clone()).collect();
        // Tools of past snapshots are held by nothing but this cache: dropped now and then.
        if kept.by_tool.len() > 2 * kept.swept.max(256) {
            kept.by_tool.retain(|_, (tool, _)| Arc::strong_count(tool) > 1);
            kept.swept = kept.by_tool.len();
        }
        rendered
    }

    /// The tenant's tools as answer `form`, which `serialise` makes of their rendering once
    /// per snapshot version.
    pub fn body(
        &self,
        catalog: &Catalog,
        tenant: &str,
        form: usize,
        serialise: impl FnOnce(Vec<T>) -> Bytes,
    ) -> Bytes {
        let snapshot = catalog.snapshot();
        let rendered = {
            let mut entries = self.entries.lock().expect("render cache");
            match entries.get(tenant) {
                Some(cached) if cached.version == snapshot.version => cached.clone(),
                _ => {
                    let fresh = Arc::new(Rendered { version: snapshot.version, bodies: Default::default() });
                    entries.insert(tenant.to_string(), fresh.clone());
                    fresh
                }
            }
        };
        rendered.bodies[form]
            .get_or_init(|| {
                let tools = self.render(snapshot.tenant(tenant).map(|view| view.tools()).unwrap_or_default());
                let body = serialise(tools);
                if body.len() >= BIG_LIST {
                    crate::memory::release_soon();
                }
                body
            })
            .clone()
    }
}
