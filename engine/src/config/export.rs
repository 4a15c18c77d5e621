//! The stored configuration read as a document: what export gives (secrets as `{set: true}`),
//! and what apply compares the desired document with, the encrypted values `{set: true}` keeps
//! included.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::{Document, GroupConfig, TenantConfig, items};
use crate::model::naming::exposed_name;
use crate::model::{Name, SourceKind, TenantSlug, parse_tags};
use crate::sso;
use crate::store::item_overrides;
use crate::store::overrides::{self, OverrideInput};
use crate::store::servers::{self, StoredSecrets};
use crate::store::{self, Result, SecretInput, groups, settings, sources, tenants};

/// (tenant slug, tool key) -> the tool's source, and secret preset name -> encrypted value.
pub(super) type PresetSecrets = HashMap<(String, String), (Uuid, Map<String, Value>)>;

/// The stored configuration: the document, and the encrypted values `{set: true}` keeps.
pub(super) struct Current {
    pub(super) document: Document,
    pub(super) server_ids: HashMap<String, Uuid>,
    pub(super) server_secrets: HashMap<String, StoredSecrets>,
    pub(super) tenant_ids: HashMap<String, Uuid>,
    pub(super) preset_secrets: PresetSecrets,
    /// The OpenID provider's sealed client secret.
    pub(super) sso_secret: Option<String>,
}

/// The whole configuration, secrets as `{set: true}`.
pub async fn export(pool: &PgPool) -> Result<Document> {
    let mut tx = pool.begin().await?;
    store::read_only(&mut tx).await?;
    Ok(current(&mut tx).await?.document)
}

pub(super) async fn current(tx: &mut Transaction<'_, Postgres>) -> Result<Current> {
    let settings = settings::get(&mut **tx).await?;
    let tenant_rows = tenants::list(&mut **tx).await?;
    let slugs: HashMap<Uuid, TenantSlug> =
        tenant_rows.iter().map(|t| Ok((t.id, TenantSlug::parse(&t.slug)?))).collect::<Result<_>>()?;
    let all_sources = sources::list(&mut **tx).await?;
    let keys = |source_id: Uuid, upstream: &str| {
        let source = all_sources.iter().find(|s| s.id == source_id).expect("references are foreign keys");
        exposed_name(&source.prefix, upstream)
    };

    let mut servers = Vec::new();
    let (mut server_ids, mut server_secrets) = (HashMap::new(), HashMap::new());
    let rows = servers::rows(&mut **tx).await?;
    for source in all_sources.iter().filter(|s| s.kind == SourceKind::Mcp) {
        let Some(row) = rows.get(&source.id) else { continue };
        let tenant = source.tenant_id.and_then(|id| slugs.get(&id).cloned());
        servers.push(row.config(source, tenant)?);
        server_ids.insert(source.name.clone(), source.id);
        server_secrets.insert(source.name.clone(), row.secrets());
    }

    let members = groups::all_members(&mut **tx).await?;
    let item_members = groups::item_members(&mut **tx).await?;
    let mut groups = Vec::new();
    for group in groups::list(&mut **tx).await? {
        let tools: BTreeSet<String> = members
            .iter()
            .filter(|(group_id, ..)| *group_id == group.id)
            .map(|(_, source_id, upstream)| keys(*source_id, upstream))
            .collect();
        groups.push(GroupConfig {
            name: Name::parse(&group.name)?,
            description: group.description,
            active_by_default: group.active_by_default,
            tools: tools.into_iter().collect(),
            items: item_members
                .iter()
                .filter(|(name, _)| *name == group.name)
                .map(|(_, item)| item.clone())
                .collect(),
        });
    }

    let choices = tenants::all_group_choices(&mut **tx).await?;
    let override_rows = overrides::all(&mut **tx).await?;
    let item_rows = item_overrides::all(&mut **tx).await?;
    let server_names: HashMap<Uuid, Name> =
        all_sources.iter().filter_map(|source| Some((source.id, Name::parse(&source.name).ok()?))).collect();
    let mut tenants = Vec::new();
    let mut preset_secrets = HashMap::new();
    for tenant in &tenant_rows {
        let slug = slugs[&tenant.id].clone();
        let groups = choices
            .iter()
            .filter(|(tenant_id, ..)| *tenant_id == tenant.id)
            .map(|(_, group, active)| Ok((Name::parse(group)?, *active)))
            .collect::<Result<_>>()?;
        let mut tools = BTreeMap::new();
        for row in override_rows.iter().filter(|o| o.tenant_id == tenant.id) {
            let key = keys(row.source_id, &row.upstream_name);
            let sealed = row.secret_presets.as_object().cloned().unwrap_or_default();
            let input = OverrideInput {
                enabled: (!row.enabled).then_some(false),
                name: row.exposed_name.clone(),
                description: row.description.clone(),
                timeout_ms: row.timeout_ms,
                presets: row.presets.as_object().cloned().unwrap_or_default(),
                secret_presets: sealed.keys().map(|k| (k.clone(), SecretInput::SET)).collect(),
            };
            preset_secrets.insert((tenant.slug.clone(), key.clone()), (row.source_id, sealed));
            tools.insert(key, input);
        }
        let mut config = TenantConfig {
            slug,
            name: Some(tenant.name.clone()),
            enabled_tags: tenant.enabled_tags.as_deref().map(parse_tags).transpose()?,
            groups,
            meta_tool: tenant.meta_tool,
            tools,
            prompts: BTreeMap::new(),
            resources: BTreeMap::new(),
            resource_templates: BTreeMap::new(),
            ceiling: tenant.ceiling.clone(),
            limits: tenant.limits,
            tool_limits: tenant.tool_limits.clone(),
            user_limits: tenant.user_limits,
            api_keys: tenant.api_keys,
            oauth: tenant.oauth,
            enabled: tenant.enabled,
            portable_mcp_schemas: tenant.portable_mcp_schemas,
            tool_discovery: tenant.tool_discovery,
            pinned_tools: tenant.pinned_tools.clone(),
        };
        items::export(&mut config, tenant.id, &item_rows, &server_names);
        tenants.push(config);
    }

    let document = Document {
        tools_enabled: settings.tools_enabled,
        default_tags: parse_tags(&settings.default_tags)?,
        servers,
        groups,
        tenants,
        sign_in: Some(sso::current(tx).await?),
    };
    let tenant_ids = tenant_rows.iter().map(|t| (t.slug.clone(), t.id)).collect();
    let sso_secret = sso::stored_secret(&mut **tx).await?;
    Ok(Current { document, server_ids, server_secrets, tenant_ids, preset_secrets, sso_secret })
}
