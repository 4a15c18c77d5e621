//! A tenant's choices for single prompts, resources and resource templates in the document:
//! `tenants[].prompts`, `.resources` and `.resource_templates`, each by server name and then
//! the server's own key (a prompt's name before its prefix, a URI, a URI template), so that a
//! choice can pick one of two servers offering the same URI and holds before discovery; and the
//! groups' prompts, resources and templates (`groups[].items`), named alike.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::{Document, GroupConfig, TenantConfig, at};
use crate::model::Name;
use crate::store::item_overrides::{self, ItemOverrideInput, StoredItemOverride};
use crate::store::items::ItemKind;
use crate::store::{Error, Result, groups, sources};

/// Choices of one kind: by server, then by the server's own key.
pub type ByServer = BTreeMap<Name, BTreeMap<String, ItemOverrideInput>>;

const KINDS: [ItemKind; 3] = [ItemKind::Prompt, ItemKind::Resource, ItemKind::ResourceTemplate];

impl TenantConfig {
    fn items_of(&self, kind: ItemKind) -> &ByServer {
        match kind {
            ItemKind::Prompt => &self.prompts,
            ItemKind::Resource => &self.resources,
            ItemKind::ResourceTemplate => &self.resource_templates,
        }
    }

    fn items_of_mut(&mut self, kind: ItemKind) -> &mut ByServer {
        match kind {
            ItemKind::Prompt => &mut self.prompts,
            ItemKind::Resource => &mut self.resources,
            ItemKind::ResourceTemplate => &mut self.resource_templates,
        }
    }

    /// Every choice with its kind, server and key, and where the document says it.
    fn item_choices(&self) -> impl Iterator<Item = (String, ItemKind, &Name, &String, &ItemOverrideInput)> {
        KINDS.into_iter().flat_map(move |kind| {
            self.items_of(kind).iter().flat_map(move |(server, choices)| {
                choices.iter().map(move |(key, input)| {
                    let place = format!("tenants.{}.{}.{server}.{key}", self.slug, section(kind));
                    (place, kind, server, key, input)
                })
            })
        })
    }
}

/// The document's key for `kind`.
fn section(kind: ItemKind) -> &'static str {
    match kind {
        ItemKind::Prompt => "prompts",
        ItemKind::Resource => "resources",
        ItemKind::ResourceTemplate => "resource_templates",
    }
}

/// `tenant`'s choices as the diff compares them: each as the export writes it (`enabled` only
/// when false), a server without any left out.
pub(super) fn view(tenant: &TenantConfig) -> Value {
    let of = |kind| {
        let mut servers = Map::new();
        for (server, choices) in tenant.items_of(kind).iter().filter(|(_, choices)| !choices.is_empty()) {
            let choices = choices.iter().map(|(key, input)| {
                let written =
                    ItemOverrideInput { enabled: input.enabled.filter(|enabled| !enabled), ..input.clone() };
                (key.clone(), serde_json::to_value(written).expect("choices serialise"))
            });
            servers.insert(server.to_string(), Value::Object(choices.collect()));
        }
        Value::Object(servers)
    };
    json!({
        "prompts": of(ItemKind::Prompt),
        "resources": of(ItemKind::Resource),
        "resource_templates": of(ItemKind::ResourceTemplate),
    })
}

/// A key is what the store keeps: 1 to 2048 bytes.
fn check_key(place: &str, key: &str) -> Result<()> {
    match key.len() {
        1..=2048 => Ok(()),
        _ => Err(Error::Invalid(format!(
            "{place}: a key (a prompt's name, a URI, a URI template) is 1 to 2048 bytes"
        ))),
    }
}

/// Fills `tenant`'s choices from the stored ones of the tenant `id` (`servers` names sources).
pub(super) fn export(
    tenant: &mut TenantConfig,
    id: Uuid,
    stored: &[StoredItemOverride],
    servers: &HashMap<Uuid, Name>,
) {
    for row in stored.iter().filter(|row| row.tenant_id == id) {
        let Some(server) = servers.get(&row.source_id) else { continue };
        let input = ItemOverrideInput {
            enabled: (!row.enabled).then_some(false),
            name: row.exposed_name.clone(),
            description: row.description.clone(),
        };
        tenant.items_of_mut(row.kind).entry(server.clone()).or_default().insert(row.key.clone(), input);
    }
}

/// Each choice names a server of the document that is shared or the tenant's own (the
/// ceiling applies when it is served, as to tools) and fits its kind; each group's item is of
/// a server of the document.
pub(super) fn check(document: &Document) -> Result<()> {
    for group in &document.groups {
        if let Some(item) =
            group.items.iter().find(|item| !document.servers.iter().any(|s| s.name == item.server))
        {
            return Err(Error::Invalid(format!(
                "groups.{}.items: server `{}` is not among the document's servers",
                group.name, item.server
            )));
        }
    }
    for tenant in &document.tenants {
        for (place, kind, server, key, input) in tenant.item_choices() {
            check_key(&place, key)?;
            let declared = document.servers.iter().find(|s| s.name == *server);
            match declared {
                None => Err(Error::Invalid(format!(
                    "{place}: server `{server}` is not among the document's servers"
                ))),
                Some(s) if s.tenant.as_ref().is_some_and(|owner| *owner != tenant.slug) => {
                    Err(Error::Invalid(format!("{place}: server `{server}` is another tenant's")))
                }
                Some(_) => input.check(kind).map_err(at(&place)),
            }?;
        }
    }
    Ok(())
}

/// The id of every server, by name.
pub(super) async fn server_ids(tx: &mut Transaction<'_, Postgres>) -> Result<HashMap<String, Uuid>> {
    Ok(sources::list(&mut **tx).await?.into_iter().map(|source| (source.name, source.id)).collect())
}

fn server_id(ids: &HashMap<String, Uuid>, server: &Name) -> Result<Uuid> {
    ids.get(server.as_str())
        .copied()
        .ok_or_else(|| Error::Invalid(format!("server `{server}` is not among the document's servers")))
}

/// Makes `group`'s items the stored ones of the group `id`.
pub(super) async fn apply_group(
    tx: &mut Transaction<'_, Postgres>,
    ids: &HashMap<String, Uuid>,
    id: Uuid,
    group: &GroupConfig,
) -> Result<()> {
    let members = group
        .items
        .iter()
        .map(|item| Ok((server_id(ids, &item.server)?, item.kind, item.key.clone())))
        .collect::<Result<Vec<_>>>()?;
    groups::replace_item_members(tx, id, &members).await
}

/// Makes `tenant`'s choices the stored ones of the tenant `id`.
pub(super) async fn apply(
    tx: &mut Transaction<'_, Postgres>,
    ids: &HashMap<String, Uuid>,
    id: Uuid,
    tenant: &TenantConfig,
) -> Result<()> {
    let mut kept = Vec::new();
    for (place, kind, server, key, input) in tenant.item_choices() {
        let source_id = server_id(ids, server).map_err(at(&place))?;
        item_overrides::write(&mut **tx, id, source_id, kind, key, input).await?;
        kept.push((source_id, kind, key.clone()));
    }
    item_overrides::retain(&mut **tx, id, &kept).await
}
