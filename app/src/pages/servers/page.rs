//! A server's page: its health, tools, pending definition changes, and what an admin does to it.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ServerSummary;
use super::register::{SaveServer, ServerFormCard, stored_server_form};
use crate::error::PanelError;
use crate::pages::ui::{
    Confirm, ErrorNote, JsonBlock, StatusBadge, action_error, counted, grid, kept_current, loaded,
    milliseconds, succeeded,
};

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

/// A prompt, resource or resource template the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerItem {
    /// "prompt", "resource", "resource template".
    pub kind: String,
    /// What clients know it by: a prompt's exposed name, a URI, a URI template.
    pub name: String,
    pub description: String,
    /// The server's own name for it (what approving a prompt names).
    pub key: String,
    /// Not served: its change awaits approval, or was rejected.
    pub held: bool,
    /// A changed listing awaits approval (above, beside the tools' changes).
    pub pending: bool,
}

/// Whose token an OAuth server's calls use, who authorized it, and what this owner may
/// authorize.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuthView {
    /// How the mode reads: "one account for every tenant"...
    pub mode: String,
    pub authorizations: Vec<AuthorizationRow>,
    /// `(label, link)`: each authorization this owner may give, in the browser.
    pub authorize: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationRow {
    pub id: String,
    /// "every tenant", "tenant acme", "ann".
    pub whose: String,
    pub status: String,
    pub reason: Option<String>,
    /// The scopes the next authorization asks for, when the server wanted more.
    pub wanted_scopes: Option<String>,
    pub expires: String,
    pub by: String,
    pub at: String,
}

/// How the server has been answering: its connection, and the last hour of calls to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerHealth {
    /// Seconds since the last successful contact.
    pub last_seen_secs: Option<f64>,
    /// The connection's last error, and how many seconds ago it happened.
    pub last_error: Option<(String, f64)>,
    pub calls: i64,
    pub errors: i64,
    pub cancelled: i64,
    /// Of the calls that finished.
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    /// The newest calls that failed or timed out.
    pub failures: Vec<Failure>,
    /// A stdio server's standard error, its newest lines.
    pub stderr: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub at: String,
    pub tenant: String,
    pub tool: String,
    pub status: String,
    pub correlation_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTool {
    pub id: String,
    pub name: String,
    pub description: String,
    pub held: bool,
    pub pending: bool,
}

/// A tool's or a prompt's definition change: what is pinned and what the upstream publishes
/// now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingDefinition {
    pub prompt: bool,
    /// The tool's id, or the prompt's name at the server: what approving names.
    pub id: String,
    pub name: String,
    pub pinned: Value,
    pub pending: Value,
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
        use engine::store::servers::{OAuthGrant, OAuthMode};
        let start = |whose: &str| engine::upstream::connect_link(None, &name) + "&for=" + whose;
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
            let name = engine::catalog::items::exposed(item.kind, prefix, &item.key);
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

/// An OAuth server's card: who authorized it, each token's state, and the ways to authorize.
fn oauth_card(oauth: OAuthView, forget: Callback<String>) -> AnyView {
    view! {
        <section class="card oauth">
            <h2>"OAuth"</h2>
            <p>"Calls use " <strong>{oauth.mode}</strong> "."</p>
            {grid(oauth.authorizations, "Nobody has authorized it yet.", &["Whose", "State", "Token expires", "Authorized by", "When", ""], move |a| {
                let id = StoredValue::new(a.id.clone());
                view! {
                    <tr>
                        <td>{a.whose.clone()}</td>
                        <td>
                            <StatusBadge status=a.status />
                            {a.reason.map(|reason| view! { <span class="small muted">" " {reason}</span> })}
                            {a.wanted_scopes.map(|scopes| view! { <span class="small wanted-scopes">" Authorizing asks for " <code>{scopes}</code></span> })}
                        </td>
                        <td>{a.expires}</td>
                        <td>{a.by}</td>
                        <td class="small">{a.at}</td>
                        <td>
                            <Confirm
                                ask="Forget…"
                                confirm=format!("Forget {}'s authorization", a.whose)
                                keep="Keep it"
                                on_confirm=Callback::new(move |()| forget.run(id.get_value()))
                            />
                        </td>
                    </tr>
                }
                .into_any()
            })}
            <div class="actions">
                {oauth.authorize.into_iter().map(|(label, link)| view! { <a class="button" href=link rel="external">{label}</a> }).collect_view()}
            </div>
            <p class="muted small">"Authorizing opens the server's sign-in; you come back here when it is done."</p>
        </section>
    }
    .into_any()
}

/// `secs` seconds ago, in the unit a reader wants.
fn ago(secs: f64) -> String {
    match secs {
        secs if secs < 90.0 => format!("{secs:.0} s ago"),
        secs if secs < 5400.0 => format!("{:.0} min ago", secs / 60.0),
        secs => format!("{:.1} h ago", secs / 3600.0),
    }
}

/// The health card of a server's page.
fn health_card(health: ServerHealth) -> AnyView {
    let seen = health.last_seen_secs.map_or_else(|| "never".into(), ago);
    let calls = if health.calls == 0 {
        "No calls in the last hour.".to_string()
    } else {
        format!(
            "Last hour: {}, {}, {} cancelled, p50 {}, p95 {}.",
            counted(health.calls, "call"),
            counted(health.errors, "error"),
            health.cancelled,
            milliseconds(health.p50_ms),
            milliseconds(health.p95_ms)
        )
    };
    view! {
        <section class="card health">
            <h2>"Health"</h2>
            <p>"Last successful contact: " <strong class="last-seen">{seen}</strong></p>
            <p class="calls-summary">{calls}</p>
            {health.last_error.map(|(error, secs)| {
                view! { <p class="error last-error">"Last connection error (" {ago(secs)} "): " {error}</p> }
            })}
            {(!health.stderr.is_empty()).then(|| {
                view! {
                    <details class="stderr">
                        <summary>{format!("What it wrote on its standard error (newest {})", counted(health.stderr.len() as i64, "line"))}</summary>
                        <pre>{health.stderr.join("\n")}</pre>
                    </details>
                }
            })}
            <h3>"Recent failures"</h3>
            {grid(health.failures, "No call to this server failed or timed out.", &["When", "Tenant", "Tool", "Status", "Correlation id"], |f| {
                view! {
                    <tr>
                        <td class="small">{f.at}</td>
                        <td>{f.tenant}</td>
                        <td><code>{f.tool}</code></td>
                        <td><StatusBadge status=f.status /></td>
                        <td><code>{f.correlation_id.unwrap_or_default()}</code></td>
                    </tr>
                }
                .into_any()
            })}
        </section>
    }
    .into_any()
}

/// What an admin does to a server, or (`Approve`, `Reject`) to one of its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerOp {
    Enable,
    Disable,
    Delete,
    /// Discover its tools now.
    Refresh,
    /// Serve the tool's pending definition (or the held tool).
    Approve,
    /// Keep the tool held rather than serve its pending definition.
    Reject,
    /// The same for one of its prompts (named by its name at the server).
    ApprovePrompt,
    RejectPrompt,
    /// Forget one of its OAuth authorizations.
    Forget,
}

/// Does `command` to the server `name` (and to the tool or authorization `id` for their
/// commands).
#[server]
pub async fn server_command(
    name: String,
    command: ServerOp,
    id: Option<String>,
) -> Result<String, PanelError> {
    use axum::http::StatusCode;
    use engine::service::servers;

    use crate::server::{owner, state};
    let owner = owner().await?;
    let state = state();
    let server = engine::model::Name::parse(&name).map_err(engine::Error::from)?;
    let target = |what: &str| {
        id.as_deref()
            .and_then(|id| id.parse::<uuid::Uuid>().ok())
            .ok_or_else(|| PanelError::rejected(StatusCode::BAD_REQUEST, format!("which {what}?")))
    };
    let tool = || target("tool");
    let prompt = || id.clone().ok_or_else(|| PanelError::rejected(StatusCode::BAD_REQUEST, "which prompt?"));
    let done = match command {
        ServerOp::Enable | ServerOp::Disable => {
            let enable = command == ServerOp::Enable;
            servers::set_enabled(&state, &owner, &server, enable).await?;
            format!("{name} {}", if enable { "enabled" } else { "disabled" })
        }
        ServerOp::Delete => {
            servers::delete(&state, &owner, &server).await?;
            format!("{name} deleted")
        }
        ServerOp::Refresh => {
            let report = servers::refresh(&state, &owner, &server).await?;
            format!(
                "Discovered: {} added, {} changed, {} removed, {} unchanged",
                report.added.len(),
                report.changed.len(),
                report.removed.len(),
                report.unchanged
            )
        }
        ServerOp::Approve => {
            servers::approve(&state, &owner, tool()?).await?;
            "Approved".into()
        }
        ServerOp::Reject => {
            servers::reject(&state, &owner, tool()?).await?;
            "Rejected: the tool stays held".into()
        }
        ServerOp::ApprovePrompt => {
            servers::approve_prompt(&state, &owner, &server, &prompt()?).await?;
            "Approved".into()
        }
        ServerOp::RejectPrompt => {
            servers::reject_prompt(&state, &owner, &server, &prompt()?).await?;
            "Rejected: the prompt stays held".into()
        }
        ServerOp::Forget => {
            servers::remove_authorization(&state, &owner, &server, target("authorization")?).await?;
            "Authorization forgotten".into()
        }
    };
    Ok(done)
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

/// The server's prompts, resources and templates, served to every tenant that may use the
/// server.
fn items_table(
    items: Vec<ServerItem>,
    run: impl Fn(ServerOp, Option<String>) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    (!items.is_empty()).then(|| {
        view! {
            <h2>"Prompts and resources"</h2>
            <p class="muted">"Served to every tenant that may use this server, under its tags."</p>
            <div class="scroll">
                <table class="grid items">
                    <thead>
                        <tr>
                            <th>"Kind"</th>
                            <th>"Name"</th>
                            <th>"Description"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {items
                            .into_iter()
                            .map(|item| {
                                view! {
                                    <tr>
                                        <td>{item.kind}</td>
                                        <td>
                                            <code>{item.name}</code>
                                            {item.held.then(|| view! { " " <StatusBadge status="held" /> })}
                                            {(item.held && !item.pending)
                                                .then(|| {
                                                    let key = item.key.clone();
                                                    view! {
                                                        " "
                                                        <button type="button" on:click=move |_| run(ServerOp::ApprovePrompt, Some(key.clone()))>
                                                            "Approve"
                                                        </button>
                                                    }
                                                })}
                                        </td>
                                        <td class="description">{item.description}</td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
        }
    })
}

#[component]
fn PendingChanges(
    pending: Vec<PendingDefinition>,
    run: impl Fn(ServerOp, Option<String>) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    if pending.is_empty() {
        return ().into_any();
    }
    view! {
        <h2>"Definition changes awaiting approval"</h2>
        <p class="muted">
            "The upstream now describes these tools or prompts differently. Until you decide, the pinned definition is served or the tool or prompt is held back."
        </p>
        {pending
            .into_iter()
            .map(|p| {
                let (approve_id, reject_id) = (p.id.clone(), p.id.clone());
                let (kind, approve, reject) = match p.prompt {
                    true => ("prompt", ServerOp::ApprovePrompt, ServerOp::RejectPrompt),
                    false => ("tool", ServerOp::Approve, ServerOp::Reject),
                };
                view! {
                    <section class="card diff">
                        <h3>{kind} " " {p.name.clone()}</h3>
                        <div class="side-by-side">
                            <JsonBlock label="Pinned (served)" value=p.pinned />
                            <JsonBlock label="Published now" value=p.pending />
                        </div>
                        <div class="actions">
                            <button type="button" class="primary" on:click=move |_| run(approve, Some(approve_id.clone()))>
                                "Approve the new definition"
                            </button>
                            <button type="button" on:click=move |_| run(reject, Some(reject_id.clone()))>
                                {format!("Reject (hold the {kind})")}
                            </button>
                        </div>
                    </section>
                }
            })
            .collect_view()}
    }
    .into_any()
}
