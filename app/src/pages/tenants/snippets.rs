//! How each common client connects to a tenant with an API key: the configuration to paste,
//! with the new key in it (or a placeholder on the tenant page).

use leptos::prelude::*;
use serde_json::json;

use crate::pages::ui::CopyButton;

/// What stands for the key where none was just made.
const PLACEHOLDER: &str = "<your API key>";

/// Each client's configuration for `endpoint` (the tenant's MCP endpoint) with `key`, and the
/// REST API's tool list at `api`: (client, where it goes, text).
fn snippets(endpoint: &str, api: &str, key: &str) -> Vec<(&'static str, &'static str, String)> {
    let slug = endpoint.rsplit('/').next().unwrap_or("tenant");
    let name = format!("toolgate-{slug}");
    let pretty = |value: serde_json::Value| serde_json::to_string_pretty(&value).expect("JSON");
    let bearer = format!("Bearer {key}");
    vec![
        (
            "Claude Code",
            "in a terminal",
            format!("claude mcp add --transport http {name} {endpoint} --header 'Authorization: {bearer}'"),
        ),
        (
            "Claude Desktop",
            "claude_desktop_config.json (through mcp-remote, which needs Node.js)",
            // No space after the colon: some clients split arguments on spaces.
            pretty(json!({"mcpServers": {&name: {
                "command": "npx",
                "args": ["-y", "mcp-remote", endpoint, "--header", "Authorization:${AUTH_HEADER}"],
                "env": {"AUTH_HEADER": bearer},
            }}})),
        ),
        (
            "Cursor",
            "~/.cursor/mcp.json",
            pretty(json!({"mcpServers": {&name: {"url": endpoint, "headers": {"Authorization": bearer}}}})),
        ),
        (
            "VS Code",
            ".vscode/mcp.json (VS Code asks for the key once and keeps it out of the file)",
            pretty(json!({
                "inputs": [{"type": "promptString", "id": "toolgate-key", "description": "Toolgate API key", "password": true}],
                "servers": {&name: {"type": "http", "url": endpoint, "headers": {"Authorization": "Bearer ${input:toolgate-key}"}}},
            })),
        ),
        (
            "curl",
            "the REST API: the tools this key may call",
            format!("curl -sS -H 'Authorization: {bearer}' {api}/tools"),
        ),
    ]
}

/// The clients' configurations, one tab each; with `key` when one was just made.
#[component]
pub(super) fn Snippets(
    endpoint: String,
    api: String,
    #[prop(optional)] key: Option<String>,
) -> impl IntoView {
    let all = snippets(&endpoint, &api, key.as_deref().unwrap_or(PLACEHOLDER));
    let chosen = RwSignal::new(0usize);
    let tabs = all
        .iter()
        .enumerate()
        .map(|(i, (client, _, _))| {
            view! { <button type="button" role="tab" class:active=move || chosen.get() == i on:click=move |_| chosen.set(i)>{*client}</button> }
        })
        .collect_view();
    view! {
        <div class="snippets">
            <div class="tabs" role="tablist">{tabs}</div>
            {move || {
                let (_, place, text) = all[chosen.get()].clone();
                view! {
                    <figure class="json snippet">
                        <figcaption><span>{place}</span><CopyButton text=text.clone() /></figcaption>
                        <pre>{text}</pre>
                    </figure>
                }
            }}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::snippets;

    #[test]
    fn every_snippet_names_the_endpoint_or_api_and_the_json_ones_parse() {
        let all = snippets("https://gw.example/mcp/acme", "https://gw.example/api/v1", "tg_secret");
        for (client, _, text) in &all {
            assert!(text.contains("https://gw.example/"), "{client}: {text}");
            if text.starts_with('{') {
                let parsed: serde_json::Value = serde_json::from_str(text).unwrap();
                assert!(parsed.to_string().contains("toolgate-acme"), "{client}: {text}");
            }
        }
        // The key is in each but VS Code's, which asks for it.
        let with_key: Vec<&str> =
            all.iter().filter(|(_, _, t)| t.contains("tg_secret")).map(|(c, _, _)| *c).collect();
        assert_eq!(with_key, ["Claude Code", "Claude Desktop", "Cursor", "curl"]);
    }
}
