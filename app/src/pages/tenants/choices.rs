//! What a tenant's LLM may see, chosen: the owner's ceiling, the tag whitelist, the groups
//! and the meta tool.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::page::TenantView;
use crate::error::PanelError;
use crate::pages::ui::{ErrorNote, SaveButton, Saved, action_error};

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
    use engine::service::tenants::TenantUpdate;

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
    use engine::model::Ceiling;
    use engine::service::tenants::TenantUpdate;

    use crate::server::{caller, comma_list, state};
    // Only owners set a ceiling: the update asks the tenant's proof for the owner's rights.
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let limit = |on: bool, list: &str| on.then(|| comma_list(list));
    let ceiling = Ceiling {
        tags: limit(form.limit_tags, &form.tags),
        sources: limit(form.limit_sources, &form.sources),
        groups: limit(form.limit_groups, &form.groups),
        shell: form.shell,
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
    /// The built-in `shell` tools are allowed.
    pub shell: bool,
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

/// Saves the tenant's group choices that changed (group name, choice) and, when given, the
/// meta tool switch. In JSON: a form encoding leaves an empty list out, which its decoder then
/// misses.
#[server(input = leptos::server_fn::codec::Json)]
pub async fn save_groups(
    slug: String,
    changed: Vec<(String, GroupChoice)>,
    meta_tool: Option<bool>,
) -> Result<(), PanelError> {
    use engine::service::tenants::TenantUpdate;

    use crate::server::{caller, state};
    let caller = caller().await?;
    let tenant = caller.tenant(&slug)?;
    let state = state();
    for (group, choice) in changed {
        let group = engine::model::Name::parse(&group).map_err(engine::Error::from)?;
        let active = match choice {
            GroupChoice::On => Some(true),
            GroupChoice::Off => Some(false),
            GroupChoice::Default => None,
        };
        engine::service::tenants::set_group(&state, &tenant, &group, active).await?;
    }
    if let Some(on) = meta_tool {
        let update = TenantUpdate { meta_tool: Some(on), ..Default::default() };
        engine::service::tenants::update(&state, &tenant, update).await?;
    }
    Ok(())
}

/// What the owner allows the tenant: editable by owners, shown to tenant administrators.
#[component]
pub(super) fn CeilingCard(tenant: TenantView, action: ServerAction<SaveCeiling>) -> impl IntoView {
    let ceiling = tenant.ceiling.clone();
    let shown = |list: &Option<Vec<String>>, every: &str| match list {
        None => every.to_string(),
        Some(list) if list.is_empty() => "none".to_string(),
        Some(list) => list.join(", "),
    };
    let summary = format!(
        "Tags: {}. Sources: {}. Groups: {}. Built-in shell tools: {}.",
        shown(&ceiling.tags, "every tag"),
        shown(&ceiling.sources, "every shared source"),
        shown(&ceiling.groups, "every group"),
        if ceiling.shell { "allowed" } else { "not allowed" }
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
    let shell = RwSignal::new(ceiling.shell);
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
            <label class="check">
                <input type="checkbox" name="ceiling-shell" prop:checked=move || shell.get() on:change=move |ev| shell.set(event_target_checked(&ev)) />
                <span>
                    "Allow the built-in shell tools (" <code>"run_command"</code>
                    ": the programs the operator allows, run on Toolgate's host). A new tenant starts without them."
                </span>
            </label>
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
                        shell: shell.get(),
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
pub(super) fn TagToggles(tenant: TenantView, action: ServerAction<SaveTags>) -> impl IntoView {
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
                    "Follow the default tags (now: " {defaults} ")"
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
            <Saved action=action what="Tags saved." />
            <ErrorNote error=action_error(action) />
        </section>
    }
}

#[component]
pub(super) fn GroupToggles(tenant: TenantView, action: ServerAction<SaveGroups>) -> impl IntoView {
    let slug = tenant.slug.clone();
    // As saved, and as chosen on the page: Save sends what differs.
    let saved: Vec<(String, GroupChoice)> =
        tenant.groups.iter().map(|g| (g.name.clone(), GroupChoice::of(g.active))).collect();
    let chosen = RwSignal::new(saved.clone());
    let saved = StoredValue::new(saved);
    let meta_on = RwSignal::new(tenant.meta_tool);
    let save = move |()| {
        let changed: Vec<(String, GroupChoice)> = chosen
            .get()
            .into_iter()
            .filter(|choice| saved.with_value(|saved| !saved.contains(choice)))
            .collect();
        let meta_tool = (meta_on.get() != tenant.meta_tool).then(|| meta_on.get());
        action.dispatch(SaveGroups { slug: slug.clone(), changed, meta_tool });
    };
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
                                    let group = g.name.clone();
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
                                                        chosen.update(|c| {
                                                            if let Some(entry) = c.iter_mut().find(|(name, _)| *name == group) {
                                                                entry.1 = choice;
                                                            }
                                                        });
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
                <input type="checkbox" prop:checked=move || meta_on.get() on:change=move |ev| meta_on.set(event_target_checked(&ev)) />
                "Offer the meta tool " <code>"reset_equipped_tools"</code> " (an agent switches its own groups per session)"
            </label>
            <SaveButton label="Save groups" pending=action.pending() on_click=Callback::new(save) />
            <Saved action=action what="Groups saved." />
            <ErrorNote error=action_error(action) />
        </section>
    }
}
