//! The prompts, resources and resource templates a tenant's clients see, next to its tools.
//!
//! An item is served under its server's rules: the server is enabled and the tenant may use
//! it (its own, or a shared one its ceiling admits), and the server's tags pass the tenant's
//! whitelist. A prompt is named like a tool, `<prefix>_<name>`; a resource keeps its URI (an
//! app's `ui://` one takes the prefix, see [`apps`]) and a template its URI template. Two
//! servers offering the same name, URI or template are a conflict: neither is served, and the
//! panel shows it. A read is routed to the server that lists the URI, else to the one whose
//! template matches it; a URI that templates of two servers match is refused, never guessed.

use std::sync::Arc;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use super::apps;
use crate::model::naming;
use crate::store::items::ItemKind;

/// An item as a tenant's clients see it.
#[derive(Debug, Clone, Serialize)]
pub struct CatalogItem {
    pub source_id: Uuid,
    pub source_name: String,
    pub kind: ItemKind,
    /// The server's own key: a prompt's name, a URI, a URI template.
    pub key: String,
    /// What clients know it by: a prompt's `<prefix>_<name>`, an app's `ui://<prefix>/…`,
    /// else the key.
    pub exposed: String,
    /// The definition clients get (a prompt's under its exposed name).
    pub definition: Arc<Value>,
    /// A template's URIs.
    #[serde(skip)]
    matcher: Option<Regex>,
}

impl CatalogItem {
    /// `definition` of `kind` from the server `source_name` with `prefix`.
    pub fn new(
        source_id: Uuid,
        source_name: &str,
        prefix: &str,
        kind: ItemKind,
        key: &str,
        mut definition: Value,
    ) -> Self {
        let exposed = exposed(kind, prefix, key);
        let field = if kind == ItemKind::Prompt { "name" } else { "uri" };
        if exposed != key {
            definition[field] = Value::String(exposed.clone());
        }
        CatalogItem {
            source_id,
            source_name: source_name.to_string(),
            kind,
            key: key.to_string(),
            exposed,
            definition: Arc::new(definition),
            matcher: (kind == ItemKind::ResourceTemplate).then(|| template_matcher(key)).flatten(),
        }
    }

    /// This item as a tenant's choice leaves it: a prompt under `name`, and described as
    /// `description`.
    pub fn chosen(&self, name: Option<&str>, description: Option<&str>) -> CatalogItem {
        let mut chosen = self.clone();
        let mut definition = (*self.definition).clone();
        if let Some(name) = name.filter(|_| self.kind == ItemKind::Prompt) {
            chosen.exposed = name.to_string();
            definition["name"] = Value::String(chosen.exposed.clone());
        }
        if let Some(description) = description {
            definition["description"] = Value::String(description.to_string());
        }
        chosen.definition = Arc::new(definition);
        chosen
    }

    /// Whether this template's URIs include `uri`.
    pub fn matches(&self, uri: &str) -> bool {
        self.matcher.as_ref().is_some_and(|matcher| matcher.is_match(uri))
    }
}

/// What a tenant's clients know the item `key` of `kind` of a server with `prefix` by: a
/// prompt's `<prefix>_<name>`, an app's `ui://<prefix>/…`, else the key.
pub fn exposed(kind: ItemKind, prefix: &str, key: &str) -> String {
    match kind {
        ItemKind::Prompt => naming::exposed_name(prefix, key),
        ItemKind::Resource => apps::exposed_uri(prefix, key),
        ItemKind::ResourceTemplate => key.to_string(),
    }
}

/// The URIs of a URI template (RFC 6570) as a regular expression: a simple expansion
/// (`{id}`) is one path segment, a reserved or fragment one (`{+path}`, `{#f}`) anything, a
/// path one (`{/a,b}`) segments, a query one (`{?q}`, `{&q}`) the rest of the query. `None`
/// for a template that is not one.
fn template_matcher(template: &str) -> Option<Regex> {
    let mut pattern = String::from("^");
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        pattern.push_str(&regex::escape(&rest[..open]));
        let close = open + rest[open..].find('}')?;
        let expression = &rest[open + 1..close];
        pattern.push_str(match expression.chars().next()? {
            '+' | '#' => ".*",
            '/' => "(?:/[^/?#]*)*",
            '.' => r"(?:\.[^/?#.]*)*",
            ';' => "(?:;[^/?#]*)*",
            '?' | '&' => "(?:[?&][^#]*)?",
            _ => "[^/?#]*",
        });
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return None;
    }
    pattern.push_str(&regex::escape(rest));
    pattern.push('$');
    Regex::new(&pattern).ok()
}

/// Two or more servers' items that would share a name, URI or template for a tenant: none
/// of them is served until one goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemConflict {
    pub kind: ItemKind,
    pub exposed: String,
    pub servers: Vec<String>,
    /// Each server's own key for it (a prompt's name before its prefix), as `servers`.
    pub keys: Vec<String>,
}

/// Why a URI cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    #[error("no server of this tenant offers the resource `{0}`")]
    Unknown(String),
    #[error("the resource `{uri}` matches templates of several servers ({}): an administrator must resolve it", servers.join(", "))]
    Ambiguous { uri: String, servers: Vec<String> },
}

/// One tenant's items, each kind sorted by what clients know it by.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TenantItems {
    prompts: Vec<Arc<CatalogItem>>,
    resources: Vec<Arc<CatalogItem>>,
    templates: Vec<Arc<CatalogItem>>,
    pub conflicts: Vec<ItemConflict>,
}

impl TenantItems {
    /// Sorts `visible` by kind and exposed name and withholds every conflict.
    pub(super) fn new(mut visible: Vec<Arc<CatalogItem>>) -> Self {
        visible
            .sort_by(|a, b| (a.kind, &a.exposed, &a.source_name).cmp(&(b.kind, &b.exposed, &b.source_name)));
        let mut items = TenantItems::default();
        for same in visible.chunk_by(|a, b| a.kind == b.kind && a.exposed == b.exposed) {
            let list = match same[0].kind {
                ItemKind::Prompt => &mut items.prompts,
                ItemKind::Resource => &mut items.resources,
                ItemKind::ResourceTemplate => &mut items.templates,
            };
            match same {
                [one] => list.push(one.clone()),
                many => items.conflicts.push(ItemConflict {
                    kind: many[0].kind,
                    exposed: many[0].exposed.clone(),
                    servers: many.iter().map(|item| item.source_name.clone()).collect(),
                    keys: many.iter().map(|item| item.key.clone()).collect(),
                }),
            }
        }
        items
    }

    pub fn prompts(&self) -> &[Arc<CatalogItem>] {
        &self.prompts
    }

    pub fn resources(&self) -> &[Arc<CatalogItem>] {
        &self.resources
    }

    pub fn templates(&self) -> &[Arc<CatalogItem>] {
        &self.templates
    }

    pub fn prompt(&self, name: &str) -> Option<&Arc<CatalogItem>> {
        find(&self.prompts, name)
    }

    pub fn template(&self, uri_template: &str) -> Option<&Arc<CatalogItem>> {
        find(&self.templates, uri_template)
    }

    /// The item a read of `uri` goes to: the resource listing it, else the one template that
    /// matches it (templates of a single server, if several of its own do).
    pub fn reading(&self, uri: &str) -> Result<&Arc<CatalogItem>, Unreadable> {
        if let Some(resource) = find(&self.resources, uri) {
            return Ok(resource);
        }
        let matching: Vec<&Arc<CatalogItem>> = self.templates.iter().filter(|t| t.matches(uri)).collect();
        match matching.as_slice() {
            [] => Err(Unreadable::Unknown(uri.to_string())),
            [first, rest @ ..] if rest.iter().all(|t| t.source_id == first.source_id) => Ok(first),
            many => {
                let mut servers: Vec<String> = many.iter().map(|t| t.source_name.clone()).collect();
                servers.sort();
                servers.dedup();
                Err(Unreadable::Ambiguous { uri: uri.to_string(), servers })
            }
        }
    }

    /// Whether a client listing these prompts, and these resources and templates, sees the
    /// same as with `other`'s.
    pub fn listed_alike(&self, other: &TenantItems) -> (bool, bool) {
        (
            alike(&self.prompts, &other.prompts),
            alike(&self.resources, &other.resources) && alike(&self.templates, &other.templates),
        )
    }
}

fn find<'a>(list: &'a [Arc<CatalogItem>], exposed: &str) -> Option<&'a Arc<CatalogItem>> {
    list.binary_search_by(|item| item.exposed.as_str().cmp(exposed)).ok().map(|i| &list[i])
}

fn alike(a: &[Arc<CatalogItem>], b: &[Arc<CatalogItem>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| Arc::ptr_eq(a, b) || a.definition == b.definition)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(server: &str, kind: ItemKind, key: &str) -> Arc<CatalogItem> {
        let id = Uuid::new_v5(&Uuid::NAMESPACE_OID, server.as_bytes());
        Arc::new(CatalogItem::new(id, server, server, kind, key, serde_json::json!({"name": key})))
    }

    #[test]
    fn uri_templates_match_the_uris_they_expand_to() {
        let cases = [
            ("test://template/{id}/data", "test://template/123/data", true),
            ("test://template/{id}/data", "test://template/1/2/data", false),
            ("test://template/{id}/data", "test://template/123/data/more", false),
            ("file:///{+path}", "file:///home/ann/notes.md", true),
            ("repo://{owner}/{name}{?ref}", "repo://ann/tools?ref=main", true),
            ("repo://{owner}/{name}{?ref}", "repo://ann/tools", true),
            ("a.b/{x}", "aXb/1", false),
        ];
        for (template, uri, matches) in cases {
            assert_eq!(
                item("s", ItemKind::ResourceTemplate, template).matches(uri),
                matches,
                "{template} {uri}"
            );
        }
        assert!(template_matcher("broken://{id").is_none());
    }

    #[test]
    fn a_read_goes_to_the_listing_server_and_never_to_a_guess() {
        let items = TenantItems::new(vec![
            item("a", ItemKind::Resource, "docs://readme"),
            item("a", ItemKind::ResourceTemplate, "docs://{page}"),
            item("b", ItemKind::ResourceTemplate, "docs://{+path}"),
            item("a", ItemKind::Resource, "same://x"),
            item("b", ItemKind::Resource, "same://x"),
            item("a", ItemKind::Prompt, "hello"),
        ]);
        assert_eq!(items.reading("docs://readme").unwrap().source_name, "a");
        assert_eq!(items.reading("docs://guides/one").unwrap().source_name, "b");
        assert_eq!(
            items.reading("docs://faq").err(),
            Some(Unreadable::Ambiguous { uri: "docs://faq".into(), servers: vec!["a".into(), "b".into()] })
        );
        assert_eq!(items.reading("same://x").err(), Some(Unreadable::Unknown("same://x".into())));
        assert_eq!(
            items.conflicts,
            vec![ItemConflict {
                kind: ItemKind::Resource,
                exposed: "same://x".into(),
                servers: vec!["a".into(), "b".into()],
                keys: vec!["same://x".into(), "same://x".into()],
            }]
        );
        assert_eq!(items.prompt("a_hello").unwrap().definition["name"], "a_hello");
        assert!(items.prompt("hello").is_none());
    }

    #[test]
    fn two_servers_apps_under_one_uri_are_both_served_each_under_its_prefix() {
        let app = |server| item(server, ItemKind::Resource, "ui://app/index.html");
        let items = TenantItems::new(vec![app("a"), app("b")]);
        assert_eq!(items.conflicts, vec![]);
        let read = items.reading("ui://b/app/index.html").unwrap();
        assert_eq!((read.source_name.as_str(), read.key.as_str()), ("b", "ui://app/index.html"));
        assert_eq!(read.definition["uri"], "ui://b/app/index.html");
        assert!(items.reading("ui://app/index.html").is_err(), "the server's own URI is not the tenant's");
    }
}
