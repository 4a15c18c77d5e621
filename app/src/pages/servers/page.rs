//! A server's page: its health, tools, pending definition changes, and what an admin does to it.
//!
//! This file is the page's read model, its server function and the page itself; its sections
//! are [`health`], [`oauth`], [`changes`] (awaiting approval) and [`items`] (prompts and
//! resources), and what the page does to the server is [`commands`].

mod changes;
mod commands;
mod health;
mod items;
mod oauth;

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde::{Deserialize, Serialize};

use super::ServerSummary;
use super::register::{SaveServer, ServerFormCard, stored_server_form};
use crate::error::PanelError;
use crate::pages::ui::{
    Confirm, ErrorNote, StatusBadge, action_error, counted, kept_current, loaded, succeeded,
};

use changes::{PendingChanges, PendingDefinition};
use commands::{ServerCommand, ServerOp};
#[cfg(feature = "ssr")]
use health::Failure;
use health::{ServerHealth, health_card};
use items::{ServerItem, items_table};
#[cfg(feature = "ssr")]
use oauth::AuthorizationRow;
use oauth::{OAuthView, oauth_card};

/// A server's page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerView {
    pub summary: ServerSummary,
    pub tools: Vec<ServerTool>,
    pub pending: Vec<PendingDefinition>,
    pub health: ServerHealth,
    /// An OAuth server's authorizations.
    pub oauth: Option<OAuthView>,
    pub items: Vec<ServerItem>,
}

impl ServerView {
    /// Whether two answers differ in nothing but how long ago things happened (which moves
    /// with every answer, and is no reason to redraw the page and close what is open on it).
    fn same_but_when(&self, other: &ServerView) -> bool {
        let timeless = |view: &ServerView| {
            let mut view = view.clone();
            view.health.last_seen_secs = None;
            if let Some((_, secs)) = &mut view.health.last_error {
                *secs = 0.0;
            }
            view
        };
        timeless(self) == timeless(other)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTool {
    pub id: String,
    pub name: String,
    pub description: String,
    pub held: bool,
    pub pending: bool,
}

#[server]
pub async fn server_detail(name: String) -> Result<ServerView, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let state = state();
    let server = engine::model::Name::parse(&name).map_err(engine::Error::from)?;
    let detail = engine::service::servers::detail(&state, &owner, &server).await?;
    let tenants = engine::service::tenants::all(&state, &owner).await?;
    let summary = super::ssr::summary(&detail.entry, &tenants, &detail.tools);
    let tools = detail
        .tools
        .into_iter()
        .map(|t| ServerTool {
            id: t.id.to_string(),
            name: t.exposed_name,
            description: t.description,
            held: t.held,
            pending: t.pending,
        })
        .collect();
    let pending = detail.pending.into_iter().map(|p| PendingDefinition {
        prompt: false,
        id: p.tool_id.to_string(),
        name: p.upstream_name,
        pinned: serde_json::to_value(p.pinned).unwrap_or_default(),
        pending: serde_json::to_value(p.pending).unwrap_or_default(),
    });
    let pending_prompts = detail.items.iter().filter_map(|item| {
        Some(PendingDefinition {
            prompt: true,
            id: item.key.clone(),
            name: item.key.clone(),
            pinned: item.definition.clone(),
            pending: item.pending.clone()?,
        })
    });
    let pending = pending.chain(pending_prompts).collect();
    let (activity, failures) = engine::service::servers::calls(&state, &owner, &server).await?;
    let hour = activity.sources.into_iter().next();
    let own = detail.entry.connections.iter().find(|h| h.tenant_id.is_none());
    let health = ServerHealth {
        last_seen_secs: own.and_then(|h| h.last_seen_secs),
        last_error: own.and_then(|h| Some((h.last_error.clone()?, h.last_error_secs?))),
        stderr: own.map(|h| h.stderr.clone()).unwrap_or_default(),
        calls: hour.as_ref().map_or(0, |h| h.calls),
        errors: hour.as_ref().map_or(0, |h| h.errors),
        cancelled: hour.as_ref().map_or(0, |h| h.cancelled),
        p50_ms: hour.as_ref().and_then(|h| h.p50_ms),
        p95_ms: hour.as_ref().and_then(|h| h.p95_ms),
        failures: failures
            .into_iter()
            .map(|f| Failure {
                at: crate::server::minute(f.at),
                tenant: f.tenant,
                tool: f.tool,
                status: f.status,
                correlation_id: f.correlation_id,
            })
            .collect(),
    };
    let oauth = detail.entry.server.oauth.as_ref().map(|oauth| {
        use engine::service::servers::{OAuthGrant, OAuthMode};
        let start = |whose: &str| engine::service::upstreams::connect_link(None, &name) + "&for=" + whose;
        let mode = match (oauth.mode, oauth.grant) {
            (_, OAuthGrant::ClientCredentials) => "client credentials (machine to machine)",
            (OAuthMode::Shared, _) => "one account for every tenant",
            (OAuthMode::Tenant, _) => "each tenant's own account",
            (OAuthMode::User, _) => "each person's own account",
        };
        let mut authorize = vec![("Authorize for every tenant".to_string(), start("shared"))];
        match oauth.mode {
            OAuthMode::Shared => {}
            OAuthMode::Tenant => authorize.extend(
                tenants
                    .iter()
                    .map(|t| (format!("Authorize for {}", t.slug), start(&format!("tenant:{}", t.slug)))),
            ),
            OAuthMode::User => authorize.push(("Connect my account".to_string(), start("me"))),
        }
        let authorizations = detail
            .authorizations
            .iter()
            .map(|a| AuthorizationRow {
                id: a.id.to_string(),
                whose: match (&a.tenant, &a.account) {
                    (Some(tenant), _) => format!("tenant {tenant}"),
                    (None, Some(account)) => account.clone(),
                    (None, None) => "every tenant".into(),
                },
                status: a.status.label().into(),
                reason: a.reason.clone(),
                wanted_scopes: (!a.wanted_scopes.is_empty()).then(|| a.wanted_scopes.join(" ")),
                expires: a.expires_at.map_or_else(|| "not said".into(), crate::server::minute),
                by: a.authorized_by.clone(),
                at: crate::server::minute(a.authorized_at),
            })
            .collect();
        OAuthView { mode: mode.into(), authorizations, authorize }
    });
    let prefix = &detail.entry.server.source.prefix;
    let items = detail
        .items
        .into_iter()
        .map(|item| {
            let name = engine::service::catalog::exposed(item.kind, prefix, &item.key);
            let description = item.definition["description"].as_str().unwrap_or_default().to_string();
            let pending = item.pending.is_some();
            ServerItem {
                kind: item.kind.label().into(),
                name,
                key: item.key,
                description,
                held: item.held,
                pending,
            }
        })
        .collect();
    Ok(ServerView { summary, tools, pending, health, oauth, items })
}

#[component]
pub fn ServerPage() -> impl IntoView {
    let params = use_params_map();
    let name = move || params.read().get("name").unwrap_or_default();
    let command = ServerAction::<ServerCommand>::new();
    let commanded = succeeded(command);
    let save = ServerAction::<SaveServer>::new();
    let saved = succeeded(save);
    let detail =
        Resource::new(move || (name(), commanded.get(), saved.get()), |(name, _, _)| server_detail(name));
    let named = move || params.read_untracked().get("name").unwrap_or_default();
    kept_current(detail, named, server_detail, ServerView::same_but_when);
    // The editor, read from the stored settings when opened.
    let editing = RwSignal::new(false);
    let editor = Resource::new(
        move || editing.get().then(name),
        |name| async move {
            match name {
                Some(name) => stored_server_form(name).await.map(Some),
                None => Ok(None),
            }
        },
    );
    // A deleted server's page has nothing left to show: on to the list, which says so.
    let navigate = leptos_router::hooks::use_navigate();
    Effect::new(move |_| {
        if matches!(command.value().get(), Some(Ok(ref done)) if done.ends_with("deleted")) {
            navigate(&format!("/servers?deleted={}", name()), Default::default());
        }
    });
    let run = move |what: ServerOp, tool: Option<String>| {
        command.dispatch(ServerCommand { name: name(), command: what, id: tool });
    };
    view! {
        <Title text=move || format!("Server {}", name()) />
        <p>
            <a href="/servers">"← Servers"</a>
        </p>
        <h1>{name}</h1>
        {move || {
            command.value()
                .get()
                .and_then(Result::ok)
                .map(|done| view! { <p class="notice ok" role="status">{done}</p> })
        }}
        <ErrorNote error=action_error(command) />
        {loaded(editor, move |form| form.map(|form| view! { <ServerFormCard save editing=form /> }))}
        {loaded(
            detail,
            move |d| {
                let enabled = d.summary.enabled;
                view! {
                    <div class="actions">
                        <StatusBadge status=d.summary.status.clone() />
                        <button type="button" disabled=move || command.pending().get() on:click=move |_| run(ServerOp::Refresh, None)>
                            {move || if command.pending().get() { "Working…" } else { "Refresh tools" }}
                        </button>
                        <button
                            type="button"
                            disabled=move || command.pending().get()
                            on:click=move |_| run(if enabled { ServerOp::Disable } else { ServerOp::Enable }, None)
                        >
                            {if enabled { "Disable" } else { "Enable" }}
                        </button>
                        <button type="button" on:click=move |_| editing.update(|open| *open = !*open)>
                            {move || if editing.get() { "Close the editor" } else { "Edit…" }}
                        </button>
                        <Confirm
                            ask="Delete…"
                            confirm=format!(
                                "Delete the server, its {} and every tenant's settings for them",
                                counted(d.tools.len() as i64, "tool"),
                            )
                            keep="Keep it"
                            on_confirm=Callback::new(move |()| run(ServerOp::Delete, None))
                        />
                    </div>
                    <p class="muted">
                        {d.summary.transport.clone()} " · " {d.summary.target.clone()} " · scope: "
                        {d.summary.scope.clone()}
                        {d.summary.protocol.clone().map(|revision| format!(" · MCP {revision}"))}
                    </p>
                    {health_card(d.health.clone())}
                    {d.oauth.clone().map(|oauth| oauth_card(oauth, Callback::new(move |id| run(ServerOp::Forget, Some(id)))))}
                    <PendingChanges pending=d.pending.clone() run />
                    <h2>"Tools"</h2>
                    <div class="scroll">
                    <table class="grid">
                        <thead>
                            <tr>
                                <th>"Name"</th>
                                <th>"Description"</th>
                                <th>"State"</th>
                                <th></th>
                            </tr>
                        </thead>
                        <tbody>
                            {d.tools
                                .into_iter()
                                .map(|t| {
                                    let id = t.id.clone();
                                    let held = t.held && !t.pending;
                                    view! {
                                        <tr>
                                            <td>
                                                <a href=format!("/tools/{}", t.id)>{t.name}</a>
                                            </td>
                                            <td class="description">{t.description}</td>
                                            <td>
                                                {if t.pending {
                                                    view! { <StatusBadge status="pending" /> }.into_any()
                                                } else if t.held {
                                                    view! { <StatusBadge status="held" /> }.into_any()
                                                } else {
                                                    view! { <StatusBadge status="served" /> }.into_any()
                                                }}
                                            </td>
                                            <td>
                                                {held
                                                    .then(|| {
                                                        view! {
                                                            <button type="button" on:click=move |_| run(ServerOp::Approve, Some(id.clone()))>
                                                                "Approve"
                                                            </button>
                                                        }
                                                    })}
                                            </td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                    </div>
                    {items_table(d.items, run)}
                }
            },
        )}
    }
}
