//! A tenant's choices for single prompts, resources and resource templates in the document:
//! `tenants[].prompts`, `.resources` and `.resource_templates`, each by server name and then
//! the server's own key (a prompt's name before its prefix, a URI, a URI template), so that a
//! choice can pick one of two servers offering the same URI and holds before discovery.

use std::collections::{BTreeMap, HashMap};

use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::{Document, TenantConfig, at};
use crate::model::Name;
use crate::store::item_overrides::{self, ItemOverrideInput, StoredItemOverride};
use crate::store::items::ItemKind;
use crate::store::{Error, Result, sources};

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

/// Each choice names a server of the document the tenant may use (shared or its own) and fits
/// its kind.
pub(super) fn check(document: &Document) -> Result<()> {
    for tenant in &document.tenants {
        for (place, kind, server, _, input) in tenant.item_choices() {
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

/// Makes `tenant`'s choices the stored ones of the tenant `id`.
pub(super) async fn apply(tx: &mut Transaction<'_, Postgres>, id: Uuid, tenant: &TenantConfig) -> Result<()> {
    let sources: HashMap<String, Uuid> =
        sources::list(&mut **tx).await?.into_iter().map(|source| (source.name, source.id)).collect();
    let mut kept = Vec::new();
    for (place, kind, server, key, input) in tenant.item_choices() {
        let source_id = *sources.get(server.as_str()).ok_or_else(|| {
            Error::Invalid(format!("{place}: server `{server}` is not among the document's servers"))
        })?;
        item_overrides::write(&mut **tx, id, source_id, kind, key, input).await?;
        kept.push((source_id, kind, key.clone()));
    }
    item_overrides::retain(&mut **tx, id, &kept).await
}
