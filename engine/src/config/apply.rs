//! Applying a document: the desired state written in one transaction (or rolled back after a
//! dry run), with the tools it names resolved to their sources.

use std::collections::BTreeSet;

use sqlx::PgPool;
use uuid::Uuid;

use super::export::current;
use super::plan::{Action, Change, moved_servers, plan};
use super::{Document, at, items};
use crate::catalog::check_presets;
use crate::model::naming::exposed_name;
use crate::model::{SourceKind, TenantSlug, tag_strings};
use crate::secret::SecretBox;
use crate::sso;
use crate::store::settings::Settings;
use crate::store::sources::SourceTool;
use crate::store::{self, Actor, Error, Result, groups, overrides, servers, settings, sources, tenants};

/// Where each tool a document may name lives: by default exposed name among existing tools,
/// and by prefix among servers for tools not discovered yet.
struct ToolIndex(Vec<SourceTool>);

impl ToolIndex {
    /// The (source, upstream name) `key` names, among the sources `tenant` sees (all of them
    /// for a group).
    fn resolve(&self, key: &str, tenant: Option<Uuid>) -> Result<(Uuid, String)> {
        let in_scope =
            self.0.iter().filter(|r| tenant.is_none() || r.tenant_id.is_none() || r.tenant_id == tenant);
        let mut found: Vec<(Uuid, String)> = in_scope
            .clone()
            .filter_map(|r| {
                let upstream = r.upstream_name.as_ref()?;
                (exposed_name(&r.prefix, upstream) == key).then(|| (r.source_id, upstream.clone()))
            })
            .collect();
        if found.is_empty() {
            // A tool not discovered yet: the server whose prefix the name starts with.
            let mut servers: Vec<(usize, Uuid, String)> = in_scope
                .filter(|r| r.kind == SourceKind::Mcp)
                .filter_map(|r| {
                    let upstream = if r.prefix.is_empty() {
                        Some(key)
                    } else {
                        key.strip_prefix(&format!("{}_", r.prefix))
                    }?;
                    (exposed_name(&r.prefix, upstream) == key)
                        .then(|| (r.prefix.len(), r.source_id, upstream.to_owned()))
                })
                .collect();
            servers.sort();
            servers.dedup();
            let longest = servers.last().map(|s| s.0);
            found = servers.into_iter().filter(|s| Some(s.0) == longest).map(|s| (s.1, s.2)).collect();
        }
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Error::Invalid(format!(
                "`{key}` names no tool: no source publishes it and no server's prefix matches it"
            ))),
            _ => Err(Error::Invalid(format!(
                "`{key}` names tools of more than one source; give the servers distinct prefixes"
            ))),
        }
    }
}

/// Applies `desired` as the whole configuration, in one transaction (all or nothing), or with
/// `dry_run` makes the same writes and rolls them back. Returns the changes; an empty list means the
/// stored configuration already is `desired` (and nothing is written or audited).
#[tracing::instrument(skip_all, err, fields(actor = actor.as_str(), dry_run))]
pub async fn apply(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    desired: &Document,
    dry_run: bool,
) -> Result<Vec<Change>> {
    desired.check()?;
    let mut tx = pool.begin().await?;
    settings::lock(&mut *tx).await?;
    let current = current(&mut tx).await?;
    let mut changes = plan(&current, desired)?;
    for (name, id) in moved_servers(&current, desired) {
        let dropped = servers::given_for_target(&mut tx, id).await?;
        if let Some(change) = changes.iter_mut().find(|c| c.kind == "server" && c.name == name) {
            change.dropped = dropped;
        }
    }
    let slugs: Vec<&TenantSlug> = desired.tenants.iter().map(|t| &t.slug).collect();
    if let Some(sign_in) = &desired.sign_in {
        sso::write(&mut tx, secrets, sign_in, Some(&slugs), true).await.map_err(at("sign_in"))?;
    }
    if changes.is_empty() {
        return Ok(changes);
    }
    let changed = |kind: &str, action: Action, name: &str| {
        changes.iter().any(|c| c.kind == kind && c.action == action && c.name == name)
    };
    let changed_any =
        |kind: &str, name: &str| changed(kind, Action::Create, name) || changed(kind, Action::Update, name);

    if changed_any("settings", "global") {
        let settings = Settings {
            tools_enabled: desired.tools_enabled,
            default_tags: tag_strings(&desired.default_tags),
        };
        settings::write(&mut *tx, &settings).await?;
    }
    let mut tenant_ids = current.tenant_ids.clone();
    for tenant in desired.tenants.iter().filter(|t| changed_any("tenant", t.slug.as_str())) {
        let stored = tenants::Tenant {
            id: Uuid::nil(),
            slug: tenant.slug.to_string(),
            name: tenant.name().to_string(),
            enabled_tags: tenant.enabled_tags.as_deref().map(tag_strings),
            meta_tool: tenant.meta_tool,
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
        let id = tenants::put(&mut *tx, &stored).await?;
        tenant_ids.insert(tenant.slug.to_string(), id);
    }
    for change in changes.iter().filter(|c| c.action == Action::Delete && c.kind == "server") {
        sources::remove(&mut *tx, current.server_ids[&change.name]).await?;
    }
    for server in desired.servers.iter().filter(|s| changed_any("server", s.name.as_str())) {
        let existing = current.server_ids.get(server.name.as_str()).copied();
        servers::write(&mut tx, secrets, actor, server, existing)
            .await
            .map_err(at(format!("servers.{}", server.name)))?;
    }
    for change in changes.iter().filter(|c| c.action == Action::Delete && c.kind == "group") {
        groups::remove(&mut *tx, &change.name).await?;
    }
    let index = ToolIndex(sources::with_tools(&mut *tx).await?);
    let server_ids = items::server_ids(&mut tx).await?;
    for group in desired.groups.iter().filter(|g| changed_any("group", g.name.as_str())) {
        let place = format!("groups.{}", group.name);
        let id = groups::upsert(&mut *tx, &group.name, &group.description, group.active_by_default, true)
            .await?
            .id;
        let members = group
            .tools
            .iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(|key| index.resolve(key, None).map_err(at(&place)))
            .collect::<Result<Vec<_>>>()?;
        groups::replace_members(&mut tx, id, &members).await?;
        items::apply_group(&mut tx, &server_ids, id, group).await.map_err(at(&place))?;
    }
    for tenant in desired.tenants.iter().filter(|t| changed_any("tenant", t.slug.as_str())) {
        let id = tenant_ids[tenant.slug.as_str()];
        tenants::replace_group_choices(&mut tx, id, &tenant.groups).await?;
        let mut kept = Vec::new();
        for (key, input) in &tenant.tools {
            let place = format!("tenants.{}.tools.{key}", tenant.slug);
            let (source_id, upstream) = index.resolve(key, Some(id)).map_err(at(&place))?;
            overrides::write(&mut tx, secrets, id, source_id, &upstream, input, check_presets)
                .await
                .map_err(at(&place))?;
            kept.push((source_id, upstream));
        }
        overrides::retain(&mut *tx, id, &kept).await?;
        items::apply(&mut tx, &server_ids, id, tenant).await?;
        for key in tenant.tool_limits.keys() {
            index.resolve(key, Some(id)).map_err(at(format!("tenants.{}.tool_limits.{key}", tenant.slug)))?;
        }
    }
    for change in changes.iter().filter(|c| c.action == Action::Delete && c.kind == "tenant") {
        tenants::remove(&mut *tx, &change.name).await?;
    }
    if let Some(sign_in) = desired.sign_in.as_ref().filter(|_| changed_any("sign_in", "global")) {
        sso::write(&mut tx, secrets, sign_in, Some(&slugs), false).await.map_err(at("sign_in"))?;
    }

    for change in &changes {
        let action = match change.action {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
        };
        let mut audit = store::Change::new(action, change.kind, &change.name);
        audit.before = change.before.clone();
        audit.after = change.after.clone();
        store::record(&mut *tx, actor, &audit).await?;
    }
    if dry_run {
        // A dry run makes every write the apply would (so it fails exactly when the apply
        // would), and keeps none.
        tx.rollback().await?;
        return Ok(changes);
    }
    store::notify_and_commit(tx, "config").await?;
    Ok(changes)
}
