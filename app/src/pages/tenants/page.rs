//! A tenant's page: what it is (read model and its server function), and the cards it is
//! made of.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde::{Deserialize, Serialize};

use super::choices::{CeilingCard, GroupToggles, SaveCeiling, SaveGroups, SaveTags, TagToggles};
use super::items::{
    ClearItemChoice, EffectiveItems, ItemConflictView, ItemOverrideView, ItemView, SaveItemChoice,
};
use super::keys::{CreateKey, Keys, RevokeKey};
use super::limits::{Limits, LimitsCard, SaveLimits};
use super::overrides::{ClearOverride, Overrides, SaveOverride};
use super::people::{AccessCard, PeopleCards, PeopleData, SaveAccess};
use super::standing::{ChangeTenant, StandingCard};
use crate::error::PanelError;
use crate::pages::ui::{ErrorNote, StatusBadge, action_error, grid, loaded, settled, succeeded};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantView {
    pub slug: String,
    pub name: String,
    /// `None` = the default tags; `Some([])` = every tag.
    pub enabled_tags: Option<Vec<String>>,
    pub default_tags: Vec<String>,
    /// Every tag any tool or source carries.
    pub known_tags: Vec<String>,
    pub meta_tool: bool,
    pub groups: Vec<GroupState>,
    pub tools: Vec<EffectiveTool>,
    pub approx_tokens: usize,
    /// The meta tool MCP sessions get besides `tools`: its description and size in tokens.
    pub offered_meta_tool: Option<(String, usize)>,
    pub conflicts: Vec<ConflictView>,
    /// The prompts, resources and templates its MCP clients see, and those two servers offer.
    pub items: Vec<ItemView>,
    pub item_conflicts: Vec<ItemConflictView>,
    /// The tenant's choices for single prompts, resources and templates.
    pub item_overrides: Vec<ItemOverrideView>,
    pub keys: Vec<KeyView>,
    /// Every tool the tenant may use (shared within its ceiling, or its own), for the
    /// override editor.
    pub catalog: Vec<CatalogEntry>,
    pub overrides: Vec<OverrideView>,
    pub ceiling: CeilingView,
    /// The owner's limits on all of the tenant's calls.
    pub limits: Limits,
    /// The owner's limits on single tools' calls, by default exposed name.
    pub tool_limits: Vec<(String, Limits)>,
    /// The owner's limits on each signed-in person's calls.
    pub user_limits: Limits,
    /// Whether the gateway accepts the tenant's API keys, and people's access tokens.
    pub api_keys: bool,
    pub oauth: bool,
    /// A disabled tenant is served nothing.
    pub enabled: bool,
    /// Its MCP clients get portable schemas instead of the schemas as published.
    pub portable_mcp_schemas: bool,
    /// Its tools are found with the search tool rather than all listed.
    pub tool_search: bool,
    /// In search mode, the tools listed all the same.
    pub pinned_tools: Vec<String>,
    /// The tenant's MCP endpoint, as clients reach it.
    pub endpoint: String,
    /// The REST API's base (`…/api/v1`), as clients reach it.
    pub api: String,
    /// The viewer is an owner, who sets the ceiling and the limits.
    pub owner_view: bool,
    /// Shared sources by name, which a ceiling may list.
    pub shared_sources: Vec<String>,
    /// The servers that act as an account of each tenant, and this tenant's.
    pub upstream_accounts: Vec<UpstreamAccount>,
}

/// A server that takes an account per tenant: where its administrators authorize one, and
/// the tenant's authorization (state, until when, by whom) once given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpstreamAccount {
    pub server: String,
    pub authorize: String,
    pub authorized: Option<(String, String, String)>,
}

/// The owner's ceiling; each `None` is no limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CeilingView {
    pub tags: Option<Vec<String>>,
    pub sources: Option<Vec<String>>,
    pub groups: Option<Vec<String>>,
    /// Whether the built-in `shell` tools are within.
    pub shell: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupState {
    pub name: String,
    pub description: String,
    pub active_by_default: bool,
    pub active: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectiveTool {
    pub id: String,
    pub name: String,
    /// Its name before any override: what pins it.
    pub default_name: String,
    pub source: String,
    pub description: String,
    pub approx_tokens: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConflictView {
    pub name: String,
    pub tool_ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyView {
    pub id: String,
    pub name: String,
    pub prefix: String,
    pub created: String,
    pub last_used: Option<String>,
    pub revoked: bool,
    /// When the key expires (or expired), if it does.
    pub expires: Option<String>,
    pub expired: bool,
    pub limits: Limits,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogEntry {
    pub id: String,
    pub name: String,
    pub source: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverrideView {
    pub tool_id: String,
    pub tool: String,
    pub enabled: bool,
    pub name: Option<String>,
    pub description: Option<String>,
    pub timeout_ms: Option<i32>,
    pub presets: serde_json::Map<String, serde_json::Value>,
    /// Names of the secret presets that are set (their values are never shown).
    pub secret_presets: Vec<String>,
}

#[server]
pub async fn tenant_detail(slug: String) -> Result<TenantView, PanelError> {
    use engine::service::tenants::{self, TenantChoices};

    use super::items::{ItemChoice, ItemKey};
    use crate::server::{caller, issuer, minute, state};
    let caller = caller().await?;
    let managed = caller.tenant(&slug)?;
    let base = issuer().await;
    let (endpoint, api) = (format!("{base}/mcp/{slug}"), format!("{base}/api/v1"));
    let state = state();
    let engine::service::tenants::TenantDetail {
        tenant,
        groups,
        overrides,
        keys,
        tools,
        approx_tokens,
        conflicts,
        meta_tool,
        items,
        item_conflicts,
        item_overrides,
        ..
    } = tenants::detail(&state, &managed).await?;
    let TenantChoices { usable, tags: known_tags, shared_sources, default_tags, names } =
        tenants::choices(&state, &managed).await?;
    let upstream_accounts = tenants::upstream_accounts(&state, &managed)
        .await?
        .into_iter()
        .map(|row| UpstreamAccount {
            authorize: engine::service::upstreams::connect_link(None, &row.server)
                + "&for=tenant:"
                + slug.as_str(),
            authorized: row.authorization.map(|a| {
                let expires = a.expires_at.map_or_else(|| "not said".into(), minute);
                (a.status.label().into(), expires, a.authorized_by)
            }),
            server: row.server,
        })
        .collect();
    let name_of = |id: uuid::Uuid| names.get(&id).cloned().unwrap_or_else(|| id.to_string());
    let tools = tools
        .into_iter()
        .map(|t| EffectiveTool {
            id: t.tool_id.to_string(),
            default_name: name_of(t.tool_id),
            name: t.name,
            source: t.source,
            description: t.description,
            approx_tokens: t.approx_tokens,
        })
        .collect();
    Ok(TenantView {
        approx_tokens,
        tools,
        offered_meta_tool: meta_tool.map(|meta| (meta.description, meta.approx_tokens)),
        conflicts: conflicts
            .into_iter()
            .map(|c| ConflictView {
                name: c.exposed_name,
                tool_ids: c.tool_ids.iter().map(|id| name_of(*id)).collect(),
            })
            .collect(),
        items: items
            .into_iter()
            .map(|item| ItemView {
                kind: item.kind.label().into(),
                item: ItemKey { server: item.source.clone(), kind: item.kind.as_str().into(), key: item.key },
                name: item.name,
                source: item.source,
                description: item.description,
                approx_tokens: item.approx_tokens,
            })
            .collect(),
        item_conflicts: item_conflicts
            .into_iter()
            .map(|c| ItemConflictView {
                kind: c.kind.label().into(),
                name: c.exposed,
                items: c
                    .servers
                    .into_iter()
                    .zip(c.keys)
                    .map(|(server, key)| ItemKey { server, kind: c.kind.as_str().into(), key })
                    .collect(),
            })
            .collect(),
        item_overrides: item_overrides
            .into_iter()
            .map(|o| ItemOverrideView {
                kind: o.kind.label().into(),
                choice: ItemChoice {
                    item: ItemKey { server: o.server, kind: o.kind.as_str().into(), key: o.key },
                    enabled: o.enabled,
                    name: o.name.unwrap_or_default(),
                    description: o.description.unwrap_or_default(),
                },
            })
            .collect(),
        groups: groups
            .into_iter()
            .filter(|g| tenant.ceiling.admits_group(&g.group))
            .map(|g| GroupState {
                name: g.group,
                description: g.description,
                active_by_default: g.active_by_default,
                active: g.active,
            })
            .collect(),
        keys: keys
            .into_iter()
            .map(|k| KeyView {
                id: k.id.to_string(),
                name: k.name,
                prefix: k.prefix,
                created: k.created_at.date().to_string(),
                last_used: k.last_used_at.map(minute),
                revoked: k.revoked_at.is_some(),
                expires: k.expires_at.map(minute),
                expired: k.expires_at.is_some_and(|at| at <= time::OffsetDateTime::now_utc()),
                limits: k.limits.0.into(),
            })
            .collect(),
        overrides: overrides
            .into_iter()
            .map(|o| OverrideView {
                tool: name_of(o.tool_id),
                tool_id: o.tool_id.to_string(),
                enabled: o.enabled,
                name: o.name,
                description: o.description,
                timeout_ms: o.timeout_ms,
                presets: o.presets,
                secret_presets: o.secret_presets,
            })
            .collect(),
        catalog: usable
            .iter()
            .map(|t| CatalogEntry {
                id: t.id.to_string(),
                name: t.exposed_name.clone(),
                source: t.source.clone(),
                description: t.description.clone(),
            })
            .collect(),
        known_tags,
        shared_sources,
        owner_view: caller.owner().is_ok(),
        upstream_accounts,
        ceiling: CeilingView {
            tags: tenant.ceiling.tags.clone(),
            sources: tenant.ceiling.sources.clone(),
            groups: tenant.ceiling.groups.clone(),
            shell: tenant.ceiling.shell,
        },
        limits: tenant.limits.into(),
        tool_limits: tenant.tool_limits.into_iter().map(|(tool, limits)| (tool, limits.into())).collect(),
        user_limits: tenant.user_limits.into(),
        enabled: tenant.enabled,
        portable_mcp_schemas: tenant.portable_mcp_schemas,
        tool_search: tenant.tool_discovery == engine::service::tenants::ToolDiscovery::Search,
        pinned_tools: tenant.pinned_tools,
        api_keys: tenant.api_keys,
        oauth: tenant.oauth,
        endpoint,
        api,
        default_tags,
        enabled_tags: tenant.enabled_tags,
        meta_tool: tenant.meta_tool,
        name: tenant.name,
        slug: tenant.slug,
    })
}

#[component]
pub fn TenantPage() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let save_tags = ServerAction::<SaveTags>::new();
    let save_groups = ServerAction::<SaveGroups>::new();
    let save_override = ServerAction::<SaveOverride>::new();
    let clear_override = ServerAction::<ClearOverride>::new();
    let create_key = ServerAction::<CreateKey>::new();
    let revoke_key = ServerAction::<RevokeKey>::new();
    let save_ceiling = ServerAction::<SaveCeiling>::new();
    let save_limits = ServerAction::<SaveLimits>::new();
    let save_access = ServerAction::<SaveAccess>::new();
    let change_tenant = ServerAction::<ChangeTenant>::new();
    let save_item = ServerAction::<SaveItemChoice>::new();
    let clear_item = ServerAction::<ClearItemChoice>::new();
    let save_schemas = ServerAction::<SaveMcpSchemas>::new();
    let save_discovery = ServerAction::<SaveDiscovery>::new();
    let changes = [
        // Checkboxes that save as they change.
        settled(save_schemas),
        settled(save_discovery),
        succeeded(save_item),
        succeeded(clear_item),
        succeeded(change_tenant),
        succeeded(save_access),
        succeeded(save_ceiling),
        succeeded(save_limits),
        succeeded(save_tags),
        succeeded(save_groups),
        succeeded(save_override),
        succeeded(clear_override),
        succeeded(create_key),
        succeeded(revoke_key),
    ];
    let changes = move || changes.map(|succeeded| succeeded.get());
    let tenant = Resource::new(move || (slug(), changes()), |(slug, _)| tenant_detail(slug));
    let people = PeopleData::new(slug);
    view! {
        <Title text=move || format!("Tenant {}", slug()) />
        <p>
            <a href="/tenants">"← Tenants"</a>
        </p>
        {loaded(
            tenant,
            move |t| {
                view! {
                    <h1>{t.name.clone()} " " <span class="muted small">{t.slug.clone()}</span></h1>
                    <CeilingCard tenant=t.clone() action=save_ceiling />
                    <LimitsCard tenant=t.clone() action=save_limits />
                    <TagToggles tenant=t.clone() action=save_tags />
                    <GroupToggles tenant=t.clone() action=save_groups />
                    <EffectiveTools tenant=t.clone() action=save_schemas discovery=save_discovery />
                    <EffectiveItems tenant=t.clone() save=save_item clear=clear_item />
                    <Overrides tenant=t.clone() save=save_override clear=clear_override />
                    <AccessCard tenant=t.clone() action=save_access />
                    <PeopleCards slug=t.slug.clone() data=people />
                    <UpstreamAccounts tenant=t.clone() />
                    <Keys tenant=t.clone() create=create_key revoke=revoke_key />
                    <StandingCard tenant=t action=change_tenant />
                }
            },
        )}
    }
}

/// The tenant's accounts at servers that act as each tenant's own (OAuth, per tenant): their
/// state, and where to authorize one (again). Nothing when no server asks for one.
#[component]
fn UpstreamAccounts(tenant: TenantView) -> impl IntoView {
    (!tenant.upstream_accounts.is_empty()).then(|| {
        let rows = tenant.upstream_accounts;
        view! {
            <section class="card">
                <h2>"Accounts at its servers"</h2>
                <p class="muted">
                    "These servers act as an account of each tenant: the tenant's calls use the account authorized here, \
                     whoever makes them."
                </p>
                {grid(rows, "", &["Server", "State", "Until", "Authorized by", ""], move |row| {
                    let (state, until, by) = match row.authorized {
                        Some((state, until, by)) => (state, until, by),
                        None => ("not authorized".into(), "—".into(), "—".into()),
                    };
                    let label = format!("Authorize for {}", tenant.slug);
                    view! {
                        <tr>
                            <td>{row.server}</td>
                            <td><StatusBadge status=state /></td>
                            <td class="small">{until}</td>
                            <td class="small">{by}</td>
                            <td><a href=row.authorize rel="external">{label}</a></td>
                        </tr>
                    }
                    .into_any()
                })}
            </section>
        }
    })
}

#[server]
pub async fn save_mcp_schemas(slug: String, portable: bool) -> Result<(), PanelError> {
    use engine::service::tenants::TenantUpdate;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let update = TenantUpdate { portable_mcp_schemas: Some(portable), ..Default::default() };
    engine::service::tenants::update(&state(), &tenant, update).await?;
    Ok(())
}

/// Sets how the tenant's tools reach the LLM: all listed, or found by search with `pinned`
/// listed all the same.
#[server(input = leptos::server_fn::codec::Json)]
pub async fn save_discovery(slug: String, search: bool, pinned: Vec<String>) -> Result<(), PanelError> {
    use engine::service::tenants::{TenantUpdate, ToolDiscovery};

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let discovery = if search { ToolDiscovery::Search } else { ToolDiscovery::List };
    let update =
        TenantUpdate { tool_discovery: Some(discovery), pinned_tools: Some(pinned), ..Default::default() };
    engine::service::tenants::update(&state(), &tenant, update).await?;
    Ok(())
}

#[component]
fn EffectiveTools(
    tenant: TenantView,
    action: ServerAction<SaveMcpSchemas>,
    discovery: ServerAction<SaveDiscovery>,
) -> impl IntoView {
    let slug = StoredValue::new(tenant.slug.clone());
    let search = tenant.tool_search;
    let pinned = StoredValue::new(tenant.pinned_tools.clone());
    let pinned_tools: Vec<&EffectiveTool> =
        tenant.tools.iter().filter(|t| tenant.pinned_tools.contains(&t.default_name)).collect();
    let pinned_listed = pinned_tools.len();
    let pinned_tokens: usize = pinned_tools.iter().map(|t| t.approx_tokens).sum();
    let save = move |search: bool, pinned: Vec<String>| {
        discovery.dispatch(SaveDiscovery { slug: slug.get_value(), search, pinned });
    };
    let pin = move |name: String, on: bool| {
        let mut names = pinned.get_value();
        names.retain(|n| *n != name);
        if on {
            names.push(name);
        }
        save(true, names);
    };
    view! {
        <section class="card">
            <h2>"What the LLM sees"</h2>
            <p class="muted">
                {tenant.tools.len()} " tools, about " <strong class="token-total">{tenant.approx_tokens}</strong>
                " tokens of tool definitions per request"
                {tenant.offered_meta_tool.as_ref().map(|(_, tokens)| format!("; MCP sessions also get the meta tool (about {tokens} more)"))}
                "."
            </p>
            <label class="check">
                <input
                    type="checkbox"
                    name="portable-mcp-schemas"
                    prop:checked=tenant.portable_mcp_schemas
                    disabled=move || action.pending().get()
                    on:change=move |ev| {
                        action.dispatch(SaveMcpSchemas { slug: slug.get_value(), portable: event_target_checked(&ev) });
                    }
                />
                "Portable schemas on MCP"
            </label>
            <p class="muted small">
                "MCP clients get each tool's schema as its server published it (full JSON Schema, presets removed). \
                 On: they get the normalised schema the REST API serves, for clients that hand schemas straight to \
                 a strict LLM provider. The schema inspector shows both."
            </p>
            <ErrorNote error=action_error(action) />
            <label class="check">
                <input
                    type="checkbox"
                    name="tool-search"
                    prop:checked=search
                    disabled=move || discovery.pending().get()
                    on:change=move |ev| save(event_target_checked(&ev), pinned.get_value())
                />
                "Found by search"
            </label>
            <p class="muted small">
                "On: the LLM is listed the search tool " <code>"search_tools"</code>
                ", the tools pinned below and the tools it found within the hour (by the same key, or person through the same app); \
                 it finds the others by saying what it needs. Every rule above still decides what it can find."
            </p>
            {search.then(|| view! {
                <p class="muted search-listing">
                    "Listed before any search: the search tool and " {pinned_listed} " pinned tools (about "
                    <strong>{pinned_tokens}</strong> " tokens of pinned tools)."
                </p>
            })}
            <ErrorNote error=action_error(discovery) />
            {tenant
                .conflicts
                .into_iter()
                .map(|c| {
                    view! {
                        <p class="notice error">
                            "Name conflict: " <code>{c.name}</code> " is the name of " {c.tool_ids.join(" and ")}
                            ". Neither is served until an override below gives one of them another name."
                        </p>
                    }
                })
                .collect_view()}
            <div class="scroll">
            <table class="grid effective-tools">
                <thead>
                    <tr>
                        <th>"Name"</th>
                        <th>"Source"</th>
                        <th>"Description"</th>
                        <th>"≈ tokens"</th>
                        {search.then(|| view! { <th>"Pinned"</th> })}
                    </tr>
                </thead>
                <tbody>
                    {tenant
                        .tools
                        .into_iter()
                        .map(|t| {
                            view! {
                                <tr>
                                    <td>
                                        <a href=format!("/tools/{}?tenant={}", t.id, tenant.slug)>{t.name.clone()}</a>
                                    </td>
                                    <td>{t.source}</td>
                                    <td class="description">{t.description}</td>
                                    <td>{t.approx_tokens}</td>
                                    {search.then(|| {
                                        let name = t.default_name.clone();
                                        view! {
                                            <td>
                                                <input
                                                    type="checkbox"
                                                    name="pinned"
                                                    aria-label=format!("Pin {}", t.name)
                                                    prop:checked=pinned.get_value().contains(&name)
                                                    disabled=move || discovery.pending().get()
                                                    on:change=move |ev| pin(name.clone(), event_target_checked(&ev))
                                                />
                                            </td>
                                        }
                                    })}
                                </tr>
                            }
                        })
                        .collect_view()}
                    {tenant.offered_meta_tool.map(|(description, tokens)| view! {
                        <tr class="meta-tool">
                            <td><code>"reset_equipped_tools"</code></td>
                            <td>"Toolgate (MCP sessions)"</td>
                            <td class="description">{description}</td>
                            <td>{tokens}</td>
                        </tr>
                    })}
                </tbody>
            </table>
            </div>
        </section>
    }
}
