//! Tenants: the list, and a tenant's page — tag and group toggles, per-tool overrides,
//! exactly what its LLM sees (with its size in tokens), name conflicts, and API keys.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde::{Deserialize, Serialize};

use super::ui::{
    Confirm, ErrorNote, ExpiryCell, NameAndExpiry, SaveButton, SecretOnce, action_error, grid, loaded,
    succeeded,
};
use crate::error::PanelError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantRow {
    pub slug: String,
    pub name: String,
    pub tools: usize,
    pub keys: usize,
}

#[server]
pub async fn list_tenants() -> Result<Vec<TenantRow>, PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    Ok(engine::service::tenants::summaries(&state(), &caller)
        .await?
        .into_iter()
        .map(|summary| TenantRow {
            tools: summary.tools,
            keys: summary.active_keys,
            slug: summary.tenant.slug,
            name: summary.tenant.name,
        })
        .collect())
}

#[server]
pub async fn create_tenant(slug: String, name: String) -> Result<String, PanelError> {
    use crate::server::{owner, state};
    let caller = owner().await?;
    let slug = engine::model::TenantSlug::parse(slug.trim()).map_err(engine::Error::from)?;
    engine::service::tenants::create(&state(), caller.owner()?, &slug, name.trim()).await?;
    Ok(slug.to_string())
}

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
    pub conflicts: Vec<ConflictView>,
    pub keys: Vec<KeyView>,
    /// Every tool the tenant may use (shared within its ceiling, or its own), for the
    /// override editor.
    pub catalog: Vec<CatalogEntry>,
    pub overrides: Vec<OverrideView>,
    pub ceiling: CeilingView,
    /// The viewer is an owner, who sets the ceiling.
    pub owner_view: bool,
    /// Shared sources by name, which a ceiling may list.
    pub shared_sources: Vec<String>,
}

/// The owner's ceiling; each `None` is no limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CeilingView {
    pub tags: Option<Vec<String>>,
    pub sources: Option<Vec<String>>,
    pub groups: Option<Vec<String>>,
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogEntry {
    pub id: String,
    pub name: String,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverrideView {
    pub tool_id: String,
    pub tool: String,
    pub enabled: bool,
    pub name: Option<String>,
    pub description: Option<String>,
    pub timeout_ms: Option<i32>,
    pub presets: String,
    /// Names of the secret presets that are set (their values are never shown).
    pub secret_presets: Vec<String>,
}

#[server]
pub async fn tenant_detail(slug: String) -> Result<TenantView, PanelError> {
    use engine::service::tenants::{self, TenantChoices};

    use crate::server::{caller, minute, state};
    let caller = caller().await?;
    let managed = caller.tenant(&slug)?;
    let state = state();
    let engine::service::tenants::TenantDetail {
        tenant,
        groups,
        overrides,
        keys,
        tools,
        approx_tokens,
        conflicts,
        ..
    } = tenants::detail(&state, &managed).await?;
    let TenantChoices { usable, tags: known_tags, shared_sources, default_tags, names } =
        tenants::choices(&state, &tenant).await?;
    let name_of = |id: uuid::Uuid| names.get(&id).cloned().unwrap_or_else(|| id.to_string());
    let tools = tools
        .into_iter()
        .map(|t| EffectiveTool {
            id: t.tool_id.to_string(),
            name: t.name,
            source: t.source,
            description: t.description,
            approx_tokens: t.approx_tokens,
        })
        .collect();
    Ok(TenantView {
        approx_tokens,
        tools,
        conflicts: conflicts
            .into_iter()
            .map(|c| ConflictView {
                name: c.exposed_name,
                tool_ids: c.tool_ids.iter().map(|id| name_of(*id)).collect(),
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
                presets: serde_json::to_string(&o.presets).unwrap_or_default(),
                secret_presets: o.secret_presets,
            })
            .collect(),
        catalog: usable
            .iter()
            .map(|t| CatalogEntry {
                id: t.id.to_string(),
                name: t.exposed_name.clone(),
                source: t.source.clone(),
            })
            .collect(),
        known_tags,
        shared_sources,
        owner_view: caller.owner().is_ok(),
        ceiling: CeilingView {
            tags: tenant.ceiling.tags.clone(),
            sources: tenant.ceiling.sources.clone(),
            groups: tenant.ceiling.groups.clone(),
        },
        default_tags,
        enabled_tags: tenant.enabled_tags,
        meta_tool: tenant.meta_tool,
        name: tenant.name,
        slug: tenant.slug,
    })
}

/// Which tags a tenant's tools must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TagMode {
    /// The configured default tags.
    Default,
    /// Every tag.
    All,
    /// The tags chosen.
    List,
}

/// Saves the tag whitelist; with [`TagMode::List`], the tags in `tags` (comma-separated).
#[server]
pub async fn save_tags(slug: String, mode: TagMode, tags: String) -> Result<(), PanelError> {
    use engine::model::Tag;
    use engine::store::tenants::TenantUpdate;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let enabled_tags = match mode {
        TagMode::Default => None,
        TagMode::All => Some(Vec::new()),
        TagMode::List => Some(
            crate::server::comma_list(&tags)
                .iter()
                .map(|t| Tag::parse(t))
                .collect::<Result<Vec<_>, _>>()
                .map_err(engine::Error::from)?,
        ),
    };
    let update = TenantUpdate { enabled_tags: Some(enabled_tags), ..Default::default() };
    engine::service::tenants::update(&state(), &tenant, update).await?;
    Ok(())
}

/// Sets the owner's ceiling: each list is comma-separated and applies only when its `limit_`
/// switch is on (off: no limit).
#[server]
pub async fn save_ceiling(slug: String, form: CeilingForm) -> Result<(), PanelError> {
    use engine::catalog::visibility::Ceiling;
    use engine::store::tenants::TenantUpdate;

    use crate::server::{comma_list, owner, state};
    let caller = owner().await?;
    let tenant = caller.tenant(&slug)?;
    let limit = |on: bool, list: &str| on.then(|| comma_list(list));
    let ceiling = Ceiling {
        tags: limit(form.limit_tags, &form.tags),
        sources: limit(form.limit_sources, &form.sources),
        groups: limit(form.limit_groups, &form.groups),
    };
    let update = TenantUpdate { ceiling: Some(ceiling), ..Default::default() };
    engine::service::tenants::update(&state(), &tenant, update).await?;
    Ok(())
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CeilingForm {
    pub limit_tags: bool,
    pub tags: String,
    pub limit_sources: bool,
    pub sources: String,
    pub limit_groups: bool,
    pub groups: String,
}

/// Whether a group is active for a tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupChoice {
    /// As the group's default says.
    Default,
    On,
    Off,
}

impl GroupChoice {
    fn of(active: Option<bool>) -> Self {
        match active {
            None => GroupChoice::Default,
            Some(true) => GroupChoice::On,
            Some(false) => GroupChoice::Off,
        }
    }

    /// The value of its `<option>`.
    fn value(self) -> &'static str {
        match self {
            GroupChoice::Default => "default",
            GroupChoice::On => "on",
            GroupChoice::Off => "off",
        }
    }

    fn from_value(value: &str) -> Self {
        [GroupChoice::On, GroupChoice::Off]
            .into_iter()
            .find(|c| c.value() == value)
            .unwrap_or(GroupChoice::Default)
    }
}

/// Sets a group for the tenant.
#[server]
pub async fn set_group(slug: String, group: String, choice: GroupChoice) -> Result<(), PanelError> {
    use crate::server::caller;
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let group = engine::model::Name::parse(&group).map_err(engine::Error::from)?;
    let active = match choice {
        GroupChoice::On => Some(true),
        GroupChoice::Off => Some(false),
        GroupChoice::Default => None,
    };
    Ok(engine::service::tenants::set_group(&crate::server::state(), &tenant, &group, active).await?)
}

#[server]
pub async fn set_meta_tool(slug: String, on: bool) -> Result<(), PanelError> {
    use engine::store::tenants::TenantUpdate;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let update = TenantUpdate { meta_tool: Some(on), ..Default::default() };
    engine::service::tenants::update(&state(), &tenant, update).await?;
    Ok(())
}

/// The override editor's fields, as typed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OverrideForm {
    pub tool_id: String,
    pub enabled: bool,
    pub name: String,
    pub description: String,
    pub timeout_ms: String,
    /// A JSON object.
    pub presets: String,
    /// `name=value` per line for new values; names of stored secrets to keep, comma-separated.
    pub new_secrets: String,
    pub keep_secrets: String,
}

#[server]
pub async fn save_override(slug: String, form: OverrideForm) -> Result<(), PanelError> {
    use axum::http::StatusCode;
    use engine::store::SecretInput;
    use engine::store::overrides::OverrideInput;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let invalid = |message: String| PanelError::rejected(StatusCode::UNPROCESSABLE_ENTITY, message);
    let tool_id = form.tool_id.parse::<uuid::Uuid>().map_err(|_| invalid("choose a tool".into()))?;
    let text = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let presets = match form.presets.trim() {
        "" => serde_json::Map::new(),
        json => {
            serde_json::from_str(json).map_err(|e| invalid(format!("presets must be a JSON object: {e}")))?
        }
    };
    let mut secret_presets: std::collections::BTreeMap<String, SecretInput> =
        crate::server::comma_list(&form.keep_secrets)
            .into_iter()
            .map(|name| (name, SecretInput::SET))
            .collect();
    for line in form.new_secrets.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (name, value) =
            line.split_once('=').ok_or_else(|| invalid(format!("`{line}` is not name=value")))?;
        secret_presets.insert(name.trim().to_string(), SecretInput::Value(value.to_string()));
    }
    let input = OverrideInput {
        enabled: Some(form.enabled),
        name: text(&form.name),
        description: text(&form.description),
        timeout_ms: match form.timeout_ms.trim() {
            "" => None,
            ms => Some(
                ms.parse().map_err(|_| invalid(format!("timeout `{ms}` is not a number of milliseconds")))?,
            ),
        },
        presets,
        secret_presets,
    };
    engine::service::tenants::set_override(&state(), &tenant, tool_id, &input).await?;
    Ok(())
}

#[server]
pub async fn clear_override(slug: String, tool_id: String) -> Result<(), PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let tool_id = tool_id.parse().map_err(|_| PanelError::invalid("which tool?"))?;
    Ok(engine::service::tenants::clear_override(&state(), &tenant, tool_id).await?)
}

/// Creates an API key, expiring after `expires_in_days` unless that is empty, and returns it:
/// the only time it is shown.
#[server]
pub async fn create_key(slug: String, name: String, expires_in_days: String) -> Result<String, PanelError> {
    use crate::server::{caller, expiry_in_days, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let expires_at = expiry_in_days(&expires_in_days)?;
    let (_, key) = engine::service::tenants::create_key(&state(), &tenant, name.trim(), expires_at).await?;
    Ok(key)
}

#[server]
pub async fn revoke_key(slug: String, id: String) -> Result<(), PanelError> {
    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let id = id.parse().map_err(|_| PanelError::invalid("which key?"))?;
    Ok(engine::service::tenants::revoke_key(&state(), &tenant, id).await?)
}

#[component]
pub fn TenantsPage() -> impl IntoView {
    let create = ServerAction::<CreateTenant>::new();
    let created = succeeded(create);
    let tenants = Resource::new(move || created.get(), |_| list_tenants());
    view! {
        <Title text="Tenants" />
        <h1>"Tenants"</h1>
        {loaded(
            tenants,
            |tenants| {
                grid(tenants, "No tenant yet.", &["Tenant", "Name", "Visible tools", "Active keys"], |t| {
                    view! {
                        <tr>
                            <td>
                                <a href=format!("/tenants/{}", t.slug)>{t.slug.clone()}</a>
                            </td>
                            <td>{t.name}</td>
                            <td>{t.tools}</td>
                            <td>{t.keys}</td>
                        </tr>
                    }
                    .into_any()
                })
            },
        )}
        <section class="card form-card">
            <h2>"New tenant"</h2>
            <ActionForm action=create attr:class="inline-form">
                <label>
                    "Slug"
                    <input type="text" name="slug" placeholder="acme" required />
                </label>
                <label>
                    "Name"
                    <input type="text" name="name" placeholder="Acme Corp" required />
                </label>
                <button type="submit" class="primary" disabled=move || create.pending().get()>
                    "Create"
                </button>
            </ActionForm>
            <ErrorNote error=action_error(create) />
        </section>
    }
}

#[component]
pub fn TenantPage() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let save_tags = ServerAction::<SaveTags>::new();
    let set_group = ServerAction::<SetGroup>::new();
    let set_meta = ServerAction::<SetMetaTool>::new();
    let save_override = ServerAction::<SaveOverride>::new();
    let clear_override = ServerAction::<ClearOverride>::new();
    let create_key = ServerAction::<CreateKey>::new();
    let revoke_key = ServerAction::<RevokeKey>::new();
    let save_ceiling = ServerAction::<SaveCeiling>::new();
    let changes = [
        succeeded(save_ceiling),
        succeeded(save_tags),
        succeeded(set_group),
        succeeded(set_meta),
        succeeded(save_override),
        succeeded(clear_override),
        succeeded(create_key),
        succeeded(revoke_key),
    ];
    let changes = move || changes.map(|succeeded| succeeded.get());
    let tenant = Resource::new(move || (slug(), changes()), |(slug, _)| tenant_detail(slug));
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
                    <TagToggles tenant=t.clone() action=save_tags />
                    <GroupToggles tenant=t.clone() action=set_group meta=set_meta />
                    <EffectiveTools tenant=t.clone() />
                    <Overrides tenant=t.clone() save=save_override clear=clear_override />
                    <Keys tenant=t create=create_key revoke=revoke_key />
                }
            },
        )}
    }
}

/// What the owner allows the tenant: editable by owners, shown to tenant administrators.
#[component]
fn CeilingCard(tenant: TenantView, action: ServerAction<SaveCeiling>) -> impl IntoView {
    let ceiling = tenant.ceiling.clone();
    let shown = |list: &Option<Vec<String>>, every: &str| match list {
        None => every.to_string(),
        Some(list) if list.is_empty() => "none".to_string(),
        Some(list) => list.join(", "),
    };
    let summary = format!(
        "Tags: {}. Sources: {}. Groups: {}.",
        shown(&ceiling.tags, "every tag"),
        shown(&ceiling.sources, "every shared source"),
        shown(&ceiling.groups, "every group")
    );
    if !tenant.owner_view {
        return view! {
            <section class="card">
                <h2>"What the owner allows"</h2>
                <p class="ceiling-summary">{summary}</p>
                <p class="muted">"Your choices below stay within this; the tenant's own servers are always allowed."</p>
            </section>
        }
        .into_any();
    }
    let field = |list: &Option<Vec<String>>| {
        (RwSignal::new(list.is_some()), RwSignal::new(list.clone().unwrap_or_default().join(", ")))
    };
    let (limit_tags, tags) = field(&ceiling.tags);
    let (limit_sources, sources) = field(&ceiling.sources);
    let (limit_groups, groups) = field(&ceiling.groups);
    let row = move |label: &'static str,
                    name: &'static str,
                    hint: String,
                    limit: RwSignal<bool>,
                    list: RwSignal<String>| {
        view! {
            <div class="inline-form">
                <label class="check">
                    <input type="checkbox" name=format!("limit-{name}") prop:checked=move || limit.get() on:change=move |ev| limit.set(event_target_checked(&ev)) />
                    {label}
                </label>
                <input type="text" name=format!("ceiling-{name}") placeholder=hint prop:disabled=move || !limit.get() prop:value=move || list.get() on:input=move |ev| list.set(event_target_value(&ev)) />
            </div>
        }
    };
    let slug = tenant.slug.clone();
    view! {
        <section class="card">
            <h2>"Ceiling"</h2>
            <p class="muted">
                "What this tenant may use at all; its administrators choose within it. A limit with an empty list allows none; the tenant's own servers are always allowed. Now: "
                {summary}
            </p>
            {row("Only the tags", "tags", "demo, files".into(), limit_tags, tags)}
            {row("Only the shared sources", "sources", tenant.shared_sources.join(", "), limit_sources, sources)}
            {row("Only the groups", "groups", "math".into(), limit_groups, groups)}
            <SaveButton
                label="Save ceiling"
                pending=action.pending()
                on_click=Callback::new(move |()| {
                    let form = CeilingForm {
                        limit_tags: limit_tags.get(),
                        tags: tags.get(),
                        limit_sources: limit_sources.get(),
                        sources: sources.get(),
                        limit_groups: limit_groups.get(),
                        groups: groups.get(),
                    };
                    action.dispatch(SaveCeiling { slug: slug.clone(), form });
                })
            />
            <ErrorNote error=action_error(action) />
        </section>
    }
    .into_any()
}

#[component]
fn TagToggles(tenant: TenantView, action: ServerAction<SaveTags>) -> impl IntoView {
    let mode = RwSignal::new(match &tenant.enabled_tags {
        None => TagMode::Default,
        Some(tags) if tags.is_empty() => TagMode::All,
        Some(_) => TagMode::List,
    });
    let chosen = RwSignal::new(tenant.enabled_tags.clone().unwrap_or_default());
    let slug = tenant.slug.clone();
    let defaults =
        if tenant.default_tags.is_empty() { "every tag".to_string() } else { tenant.default_tags.join(", ") };
    view! {
        <section class="card">
            <h2>"Tags"</h2>
            <p class="muted">
                "A tool is visible when one of its tags is enabled; a tool without tags is always visible; enabling no tag at all admits every tool."
            </p>
            <div class="radio-row">
                <label class="check">
                    <input type="radio" name="tag-mode" prop:checked=move || mode.get() == TagMode::Default on:change=move |_| mode.set(TagMode::Default) />
                    "Use the default tags (" {defaults} ")"
                </label>
                <label class="check">
                    <input type="radio" name="tag-mode" prop:checked=move || mode.get() == TagMode::All on:change=move |_| mode.set(TagMode::All) />
                    "Every tag"
                </label>
                <label class="check">
                    <input type="radio" name="tag-mode" prop:checked=move || mode.get() == TagMode::List on:change=move |_| mode.set(TagMode::List) />
                    "Only these:"
                </label>
            </div>
            <div class="switches" class:disabled=move || mode.get() != TagMode::List>
                {tenant
                    .known_tags
                    .into_iter()
                    .map(|tag| {
                        let (t1, t2) = (tag.clone(), tag.clone());
                        view! {
                            <label class="switch">
                                <input
                                    type="checkbox"
                                    data-tag=tag.clone()
                                    prop:disabled=move || mode.get() != TagMode::List
                                    prop:checked=move || chosen.read().contains(&t1)
                                    on:change=move |ev| {
                                        let on = event_target_checked(&ev);
                                        chosen.update(|c| {
                                            c.retain(|x| x != &t2);
                                            if on {
                                                c.push(t2.clone());
                                            }
                                        });
                                    }
                                />
                                <span>{tag}</span>
                            </label>
                        }
                    })
                    .collect_view()}
            </div>
            <SaveButton
                label="Save tags"
                pending=action.pending()
                on_click=Callback::new(move |()| {
                    action.dispatch(SaveTags { slug: slug.clone(), mode: mode.get(), tags: chosen.get().join(",") });
                })
            />
            <ErrorNote error=action_error(action) />
        </section>
    }
}

#[component]
fn GroupToggles(
    tenant: TenantView,
    action: ServerAction<SetGroup>,
    meta: ServerAction<SetMetaTool>,
) -> impl IntoView {
    let (slug, meta_slug) = (tenant.slug.clone(), tenant.slug.clone());
    let meta_on = tenant.meta_tool;
    view! {
        <section class="card">
            <h2>"Groups"</h2>
            <p class="muted">"A tool in groups is visible when at least one of its groups is active; a tool in no group is unaffected."</p>
            {if tenant.groups.is_empty() {
                let none = if tenant.ceiling.groups.is_some() { "The owner allows no group here." } else { "No group is defined." };
                view! { <p class="muted">{none}</p> }.into_any()
            } else {
                view! {
                    <table class="grid">
                        <tbody>
                            {tenant
                                .groups
                                .into_iter()
                                .map(|g| {
                                    let (slug, group) = (slug.clone(), g.name.clone());
                                    let current = GroupChoice::of(g.active).value();
                                    let default = if g.active_by_default { "active" } else { "inactive" };
                                    view! {
                                        <tr>
                                            <td>
                                                <strong>{g.name.clone()}</strong>
                                                <div class="muted small">{g.description}</div>
                                            </td>
                                            <td>
                                                <select
                                                    data-group=g.name.clone()
                                                    prop:value=current
                                                    on:change=move |ev| {
                                                        let choice = GroupChoice::from_value(&event_target_value(&ev));
                                                        action.dispatch(SetGroup { slug: slug.clone(), group: group.clone(), choice });
                                                    }
                                                >
                                                    <option value=GroupChoice::Default.value()>{format!("Default ({default})")}</option>
                                                    <option value=GroupChoice::On.value()>"Active"</option>
                                                    <option value=GroupChoice::Off.value()>"Inactive"</option>
                                                </select>
                                            </td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                }
                    .into_any()
            }}
            <label class="check">
                <input
                    type="checkbox"
                    prop:checked=meta_on
                    on:change=move |ev| {
                        meta.dispatch(SetMetaTool { slug: meta_slug.clone(), on: event_target_checked(&ev) });
                    }
                />
                "Offer the meta tool " <code>"reset_equipped_tools"</code> " (an agent switches its own groups per session)"
            </label>
            <ErrorNote error=action_error(action) />
            <ErrorNote error=action_error(meta) />
        </section>
    }
}

#[component]
fn EffectiveTools(tenant: TenantView) -> impl IntoView {
    view! {
        <section class="card">
            <h2>"What the LLM sees"</h2>
            <p class="muted">
                {tenant.tools.len()} " tools, about " <strong class="token-total">{tenant.approx_tokens}</strong>
                " tokens of tool definitions per request."
            </p>
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
            <table class="grid effective-tools">
                <thead>
                    <tr>
                        <th>"Name"</th>
                        <th>"Source"</th>
                        <th>"Description"</th>
                        <th>"≈ tokens"</th>
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
                                        <a href=format!("/tools/{}?tenant={}", t.id, tenant.slug)>{t.name}</a>
                                    </td>
                                    <td>{t.source}</td>
                                    <td class="description">{t.description}</td>
                                    <td>{t.approx_tokens}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </section>
    }
}

#[component]
fn Overrides(
    tenant: TenantView,
    save: ServerAction<SaveOverride>,
    clear: ServerAction<ClearOverride>,
) -> impl IntoView {
    let form = RwSignal::new(OverrideForm { enabled: true, ..Default::default() });
    let overrides = StoredValue::new(tenant.overrides.clone());
    // Choosing a tool loads its override, if it has one, into the editor.
    let choose = move |tool_id: String| {
        let existing = overrides.with_value(|o| o.iter().find(|o| o.tool_id == tool_id).cloned());
        form.set(match existing {
            Some(o) => OverrideForm {
                tool_id,
                enabled: o.enabled,
                name: o.name.unwrap_or_default(),
                description: o.description.unwrap_or_default(),
                timeout_ms: o.timeout_ms.map(|t| t.to_string()).unwrap_or_default(),
                presets: if o.presets == "{}" { String::new() } else { o.presets },
                new_secrets: String::new(),
                keep_secrets: o.secret_presets.join(", "),
            },
            None => OverrideForm { tool_id, enabled: true, ..Default::default() },
        });
    };
    let slug = StoredValue::new(tenant.slug.clone());
    let edit = move |f: fn(&mut OverrideForm, String)| {
        move |ev| form.update(|form| f(form, event_target_value(&ev)))
    };
    view! {
        <section class="card">
            <h2>"Per-tool overrides"</h2>
            {(!tenant.overrides.is_empty())
                .then(|| {
                    view! {
                        <ul class="plain">
                            {tenant
                                .overrides
                                .iter()
                                .map(|o| {
                                    let (id, clear_id) = (o.tool_id.clone(), o.tool_id.clone());
                                    let summary = [
                                        (!o.enabled).then(|| "hidden".to_string()),
                                        o.name.clone().map(|n| format!("named {n}")),
                                        o.timeout_ms.map(|t| format!("timeout {t} ms")),
                                        (o.presets != "{}").then(|| format!("presets {}", o.presets)),
                                        (!o.secret_presets.is_empty()).then(|| format!("secret presets {} (set)", o.secret_presets.join(", "))),
                                    ]
                                    .into_iter()
                                    .flatten()
                                    .collect::<Vec<_>>()
                                    .join("; ");
                                    view! {
                                        <li>
                                            <code>{o.tool.clone()}</code> ": " {summary} " "
                                            <button type="button" class="link" on:click=move |_| choose(id.clone())>"Edit"</button>
                                            <button
                                                type="button"
                                                class="link"
                                                on:click=move |_| {
                                                    clear.dispatch(ClearOverride { slug: slug.get_value(), tool_id: clear_id.clone() });
                                                }
                                            >
                                                "Remove"
                                            </button>
                                        </li>
                                    }
                                })
                                .collect_view()}
                        </ul>
                    }
                })}
            <div class="form-grid">
                <label>
                    "Tool"
                    <select prop:value=move || form.read().tool_id.clone() on:change=move |ev| choose(event_target_value(&ev))>
                        <option value="">"Choose a tool…"</option>
                        {tenant
                            .catalog
                            .into_iter()
                            .map(|t| view! { <option value=t.id>{format!("{} ({})", t.name, t.source)}</option> })
                            .collect_view()}
                    </select>
                </label>
                <label class="check">
                    <input
                        type="checkbox"
                        prop:checked=move || form.read().enabled
                        on:change=move |ev| form.update(|f| f.enabled = event_target_checked(&ev))
                    />
                    "Enabled for this tenant"
                </label>
                <label>
                    "Exposed name (empty = the default)"
                    <input type="text" prop:value=move || form.read().name.clone() on:input=edit(|f, v| f.name = v) />
                </label>
                <label>
                    "Timeout in ms (empty = the tool's)"
                    <input type="text" prop:value=move || form.read().timeout_ms.clone() on:input=edit(|f, v| f.timeout_ms = v) />
                </label>
                <label class="wide">
                    "Description (empty = the tool's)"
                    <textarea rows="2" prop:value=move || form.read().description.clone() on:input=edit(|f, v| f.description = v)></textarea>
                </label>
                <label>
                    "Presets (a JSON object; removed from the schema, injected at execution)"
                    <textarea rows="2" placeholder="{\"region\": \"eu\"}" prop:value=move || form.read().presets.clone() on:input=edit(|f, v| f.presets = v)></textarea>
                </label>
                <label>
                    "New secret presets (name=value per line; encrypted, never shown again)"
                    <textarea rows="2" prop:value=move || form.read().new_secrets.clone() on:input=edit(|f, v| f.new_secrets = v)></textarea>
                </label>
                <label>
                    "Stored secret presets to keep (comma-separated)"
                    <input type="text" prop:value=move || form.read().keep_secrets.clone() on:input=edit(|f, v| f.keep_secrets = v) />
                </label>
            </div>
            <div class="actions">
                <button
                    type="button"
                    class="primary"
                    disabled=move || save.pending().get() || form.read().tool_id.is_empty()
                    on:click=move |_| {
                        save.dispatch(SaveOverride { slug: slug.get_value(), form: form.get() });
                    }
                >
                    "Save override"
                </button>
            </div>
            <ErrorNote error=action_error(save) />
            <ErrorNote error=action_error(clear) />
        </section>
    }
}

#[component]
fn Keys(
    tenant: TenantView,
    create: ServerAction<CreateKey>,
    revoke: ServerAction<RevokeKey>,
) -> impl IntoView {
    let slug = StoredValue::new(tenant.slug.clone());
    let name = RwSignal::new(String::new());
    let days = RwSignal::new(String::new());
    view! {
        <section class="card">
            <h2>"API keys"</h2>
            <p class="muted">"LLM applications send " <code>"Authorization: Bearer <key>"</code> " to " <code>{format!("/mcp/{}", tenant.slug)}</code> " and " <code>"/api/v1"</code> "."</p>
            {move || {
                create
                    .value()
                    .get()
                    .and_then(Result::ok)
                    .map(|key| view! { <SecretOnce what="key" secret=key /> })
            }}
            <table class="grid">
                <thead>
                    <tr>
                        <th>"Name"</th>
                        <th>"Key"</th>
                        <th>"Created"</th>
                        <th>"Last used"</th>
                        <th>"Expires"</th>
                        <th></th>
                    </tr>
                </thead>
                <tbody>
                    {tenant
                        .keys
                        .into_iter()
                        .map(|k| {
                            let id = k.id.clone();
                            let confirm = format!("Revoke `{}` now", k.name);
                            view! {
                                <tr class:revoked=k.revoked>
                                    <td>{k.name}</td>
                                    <td>
                                        <code>{k.prefix} "…"</code>
                                    </td>
                                    <td>{k.created}</td>
                                    <td>{k.last_used.unwrap_or_else(|| "never".into())}</td>
                                    <ExpiryCell expires=k.expires expired=k.expired />
                                    <td>
                                        {if k.revoked {
                                            view! { <span class="muted">"revoked"</span> }.into_any()
                                        } else {
                                            view! {
                                                <Confirm
                                                    ask="Revoke…"
                                                    confirm=confirm
                                                    keep="Keep it"
                                                    on_confirm=Callback::new(move |()| {
                                                        // A key just made and now revoked is no longer shown.
                                                        create.value().set(None);
                                                        revoke.dispatch(RevokeKey { slug: slug.get_value(), id: id.clone() });
                                                    })
                                                />
                                            }
                                                .into_any()
                                        }}
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
            <div class="inline-form">
                <NameAndExpiry what="key" label="Key name" placeholder="production" name days />
                <button
                    type="button"
                    class="primary"
                    disabled=move || create.pending().get()
                    on:click=move |_| {
                        create.dispatch(CreateKey { slug: slug.get_value(), name: name.get(), expires_in_days: days.get() });
                    }
                >
                    "Create key"
                </button>
            </div>
            <ErrorNote error=action_error(create) />
            <ErrorNote error=action_error(revoke) />
        </section>
    }
}
