//! The plan: what a document changes in the stored configuration, entity by entity, as the
//! diff shows it (secrets never as values).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::export::{Current, PresetSecrets};
use super::{Document, GroupConfig, TenantConfig, at, items};
use crate::sso;
use crate::store::item_overrides::ItemRef;
use crate::store::overrides::OverrideInput;
use crate::store::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Create,
    Update,
    Delete,
}

/// One entity a document changes, as the diff shows it (secrets never as values).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub action: Action,
    /// `settings`, `server`, `group` or `tenant`.
    pub kind: &'static str,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
    /// What a server's move to a new URL, command or working directory drops: what tenants
    /// gave it for its old target (credentials, OAuth authorizations).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
}

fn settings_view(document: &Document) -> Value {
    json!({ "tools_enabled": document.tools_enabled, "default_tags": document.default_tags })
}

fn group_view(group: &GroupConfig) -> Value {
    let tools: BTreeSet<&String> = group.tools.iter().collect();
    let items: BTreeSet<&ItemRef> = group.items.iter().collect();
    json!({
        "description": group.description,
        "active_by_default": group.active_by_default,
        "tools": tools,
        "items": items,
    })
}

/// A tenant as the diff shows it: defaults filled in, secret presets redacted (kept from
/// `stored` unless their server is among the `moved` ones).
fn tenant_view(tenant: &TenantConfig, stored: &PresetSecrets, moved: &HashSet<Uuid>) -> Result<Value> {
    let mut tools = Map::new();
    for (key, input) in &tenant.tools {
        let place = format!("tenants.{}.tools.{key}", tenant.slug);
        let stored = stored.get(&(tenant.slug.to_string(), key.clone()));
        let mut presets = Map::new();
        for (name, secret) in &input.secret_presets {
            let kept = stored.and_then(|(_, s)| s.get(name)).and_then(Value::as_str);
            if kept.is_some()
                && secret.new_value().is_none()
                && stored.is_some_and(|(id, _)| moved.contains(id))
            {
                return Err(Error::Invalid(format!(
                    "{place}: secret preset `{name}` must be given again: its server's URL, command or working \
                     directory changes, and a stored secret never follows its server to a new target"
                )));
            }
            presets.insert(name.clone(), secret.redact(name, kept).map_err(at(&place))?);
        }
        let mut shown = serde_json::to_value(OverrideInput {
            enabled: input.enabled.filter(|enabled| !enabled),
            secret_presets: BTreeMap::new(),
            ..input.clone()
        })
        .expect("overrides serialise");
        if !presets.is_empty() {
            shown["secret_presets"] = Value::Object(presets);
        }
        tools.insert(key.clone(), shown);
    }
    let items = items::view(tenant);
    Ok(json!({
        "name": tenant.name(),
        "enabled_tags": tenant.enabled_tags,
        "groups": tenant.groups,
        "meta_tool": tenant.meta_tool,
        "tools": tools,
        "prompts": items["prompts"],
        "resources": items["resources"],
        "resource_templates": items["resource_templates"],
        "ceiling": tenant.ceiling,
        "limits": tenant.limits,
        "tool_limits": tenant.tool_limits,
        "user_limits": tenant.user_limits,
        "api_keys": tenant.api_keys,
        "oauth": tenant.oauth,
        "enabled": tenant.enabled,
        "portable_mcp_schemas": tenant.portable_mcp_schemas,
        "tool_discovery": tenant.tool_discovery,
        "pinned_tools": tenant.pinned_tools,
    }))
}

/// Compares entities by name: what to create, update and delete to go from `before` to
/// `after`, in `after`'s order (deletions last).
fn diff(kind: &'static str, before: Vec<(String, Value)>, after: Vec<(String, Value)>) -> Vec<Change> {
    let mut old: BTreeMap<String, Value> = before.into_iter().collect();
    let mut changes = Vec::new();
    for (name, new) in after {
        match old.remove(&name) {
            None => changes.push(Change {
                action: Action::Create,
                kind,
                name,
                before: None,
                after: Some(new),
                dropped: vec![],
            }),
            Some(old) if old != new => changes.push(Change {
                action: Action::Update,
                kind,
                name,
                before: Some(old),
                after: Some(new),
                dropped: vec![],
            }),
            Some(_) => {}
        }
    }
    changes.extend(old.into_iter().map(|(name, old)| Change {
        action: Action::Delete,
        kind,
        name,
        before: Some(old),
        after: None,
        dropped: vec![],
    }));
    changes
}

/// The servers `desired` moves to a new URL, command or working directory, by name.
pub(super) fn moved_servers(current: &Current, desired: &Document) -> HashMap<String, Uuid> {
    desired
        .servers
        .iter()
        .filter(|s| current.server_secrets.get(s.name.as_str()).is_some_and(|stored| stored.moved(s)))
        .map(|s| (s.name.to_string(), current.server_ids[s.name.as_str()]))
        .collect()
}

pub(super) fn plan(current: &Current, desired: &Document) -> Result<Vec<Change>> {
    let mut changes = diff(
        "settings",
        vec![("global".into(), settings_view(&current.document))],
        vec![("global".into(), settings_view(desired))],
    );
    let server_views = |document: &Document| -> Result<Vec<(String, Value)>> {
        document
            .servers
            .iter()
            .map(|s| {
                let stored = current.server_secrets.get(s.name.as_str());
                Ok((s.name.to_string(), s.redacted(stored).map_err(at(format!("servers.{}", s.name)))?))
            })
            .collect()
    };
    changes.extend(diff("server", server_views(&current.document)?, server_views(desired)?));
    let group_views =
        |document: &Document| document.groups.iter().map(|g| (g.name.to_string(), group_view(g))).collect();
    changes.extend(diff("group", group_views(&current.document), group_views(desired)));
    let tenant_views = |document: &Document, moved: &HashSet<Uuid>| -> Result<Vec<(String, Value)>> {
        document
            .tenants
            .iter()
            .map(|t| Ok((t.slug.to_string(), tenant_view(t, &current.preset_secrets, moved)?)))
            .collect()
    };
    let moved = moved_servers(current, desired).into_values().collect();
    changes.extend(diff(
        "tenant",
        tenant_views(&current.document, &HashSet::new())?,
        tenant_views(desired, &moved)?,
    ));
    if let (Some(now), Some(wanted)) = (&current.document.sign_in, &desired.sign_in) {
        let stored = current.sso_secret.as_deref();
        let view = |config| sso::redacted(config, stored).map_err(at("sign_in"));
        changes.extend(diff(
            "sign_in",
            vec![("global".into(), view(now)?)],
            vec![("global".into(), view(wanted)?)],
        ));
    }
    Ok(changes)
}
