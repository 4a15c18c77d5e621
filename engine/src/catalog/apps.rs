//! MCP Apps (the `io.modelcontextprotocol/ui` extension): a tool names, in `_meta.ui`, a
//! `ui://` resource of its server that hosts show as the tool's interface.
//!
//! Toolgate keeps that part of a tool's `_meta` and serves it with the tool, and serves the
//! server's `ui://` resources like any other. Several servers' apps must not collide (two
//! servers built from one template both say `ui://app/index.html`), so a server's `ui://`
//! URIs take its prefix as their first segment, `ui://<prefix>/<rest>`, in the tool's `_meta`
//! and in the resource list alike; a read goes to the server under its own URI. An empty
//! prefix keeps the URIs as they are, as it keeps tool names.

use rmcp::model::ExtensionCapabilities;
use serde_json::{Map, Value, json};

/// The extension's identifier in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The type of an app's HTML document.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

const SCHEME: &str = "ui://";

/// The extension in `capabilities.extensions`: Toolgate takes apps from its upstreams (which
/// may offer them only to clients that say so) and passes them on to whichever host shows
/// them; a client that does not ignores the tool's `_meta`.
pub fn capability() -> ExtensionCapabilities {
    let settings = json!({"mimeTypes": [MIME_TYPE]});
    let Value::Object(settings) = settings else { unreachable!("an object") };
    ExtensionCapabilities::from([(EXTENSION.to_string(), settings)])
}
/// The `_meta` keys hosts read: the extension's `ui` object, and the flat key of its drafts
/// that hosts still accept.
const UI: &str = "ui";
const FLAT_RESOURCE_URI: &str = "ui/resourceUri";

/// The part of a listed tool's `_meta` that concerns its app; `None` when it has none.
pub fn tool_meta(meta: Option<&Map<String, Value>>) -> Option<Value> {
    let kept: Map<String, Value> = meta?
        .iter()
        .filter(|(key, value)| match key.as_str() {
            UI => value.is_object(),
            FLAT_RESOURCE_URI => value.is_string(),
            _ => false,
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    (!kept.is_empty()).then_some(Value::Object(kept))
}

/// Whether `uri` is an app's.
pub fn is_app_uri(uri: &str) -> bool {
    uri.starts_with(SCHEME)
}

/// The URI a tenant's clients know the `ui://` resource `uri` of a server with `prefix` by.
pub fn exposed_uri(prefix: &str, uri: &str) -> String {
    match uri.strip_prefix(SCHEME) {
        Some(rest) if !prefix.is_empty() => format!("{SCHEME}{prefix}/{rest}"),
        _ => uri.to_string(),
    }
}

/// The `ui://` resource a tool's kept `_meta` names.
pub fn resource_uri(meta: &Value) -> Option<&str> {
    meta.pointer("/ui/resourceUri").or_else(|| meta.get(FLAT_RESOURCE_URI)).and_then(Value::as_str)
}

/// A tool's kept `_meta` as clients get it: its `ui://` URIs exposed under `prefix`.
pub fn exposed_meta(prefix: &str, meta: &Value) -> Value {
    let mut meta = meta.clone();
    // `ui.resourceUri`, and the flat key (`~1` is a `/` in a JSON pointer).
    for pointer in ["/ui/resourceUri", "/ui~1resourceUri"] {
        if let Some(uri) = meta.pointer_mut(pointer)
            && let Some(text) = uri.as_str().filter(|text| is_app_uri(text))
        {
            *uri = Value::String(exposed_uri(prefix, text));
        }
    }
    meta
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_the_apps_part_of_a_tools_meta_is_kept() {
        let listed = json!({
            "ui": {"resourceUri": "ui://weather/view.html", "visibility": ["model", "app"]},
            "ui/resourceUri": "ui://weather/view.html",
            "fastmcp": {"tags": []},
        });
        let kept = tool_meta(listed.as_object()).unwrap();
        assert_eq!(kept.as_object().unwrap().keys().collect::<Vec<_>>(), ["ui", "ui/resourceUri"]);
        assert_eq!(tool_meta(json!({"fastmcp": {}}).as_object()), None);
        assert_eq!(tool_meta(json!({"ui": "not an object"}).as_object()), None);
        assert_eq!(tool_meta(None), None);
    }

    #[test]
    fn two_servers_apps_are_told_apart_by_their_prefixes() {
        let meta = json!({"ui": {"resourceUri": "ui://app/index.html", "csp": {}}, "ui/resourceUri": "ui://app/index.html"});
        let a = exposed_meta("a", &meta);
        let b = exposed_meta("b", &meta);
        assert_eq!(resource_uri(&a), Some("ui://a/app/index.html"));
        assert_eq!(a["ui/resourceUri"], "ui://a/app/index.html");
        assert_eq!(a["ui"]["csp"], json!({}));
        assert_eq!(b["ui"]["resourceUri"], "ui://b/app/index.html");
        assert_eq!(exposed_meta("", &meta), meta, "an empty prefix keeps the URIs");
        assert_eq!(exposed_uri("a", "https://example.com/x"), "https://example.com/x");
    }
}
