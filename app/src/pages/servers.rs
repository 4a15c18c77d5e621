//! MCP servers: the list with health, registering one (after testing its connection), and a
//! server's page with its tools and the definition changes awaiting approval.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ui::{Confirm, ErrorNote, JsonBlock, StatusBadge, action_error, grid, loaded, succeeded};
use crate::error::PanelError;

/// A server as the list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
    pub name: String,
    pub transport: String,
    /// The URL, or the command line of a stdio server (and the directory it runs in).
    pub target: String,
    pub tags: Vec<String>,
    /// "shared", or the owning tenant.
    pub scope: String,
    pub enabled: bool,
    /// The connection's status in this process, or "disabled".
    pub status: String,
    pub last_error: Option<String>,
    pub tool_count: usize,
    /// Tools held back or with a definition change awaiting approval.
    pub awaiting: usize,
    /// The MCP revision its connection speaks, once connected.
    pub protocol: Option<String>,
}

/// The registration form, as typed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerForm {
    pub name: String,
    pub prefix: String,
    pub transport: String,
    pub url: String,
    pub command: String,
    /// One argument per line.
    pub args: String,
    /// A stdio server's working directory; empty = Toolgate's.
    pub cwd: String,
    /// `Name: value` per line; stored encrypted.
    pub headers: String,
    /// `NAME=value` per line, for a stdio server; stored encrypted.
    pub env: String,
    pub tags: String,
    pub tenant: String,
    pub on_definition_change: String,
    pub new_tools_enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestOutcome {
    pub ok: bool,
    pub message: String,
}

#[cfg(feature = "ssr")]
pub(super) mod ssr {
    use std::collections::BTreeMap;

    use axum::http::StatusCode;
    use engine::model::{Name, Tag, TenantSlug};
    use engine::store::SecretInput;
    use engine::store::servers::{EnvValue, OnDefinitionChange, ServerConfig, Transport};

    use engine::service::Owner;
    use engine::service::servers::ServerEntry;
    use engine::store::sources::ToolRecord;
    use engine::store::tenants::Tenant;

    use super::{ServerForm, ServerSummary};
    use crate::error::PanelError;
    use crate::server::comma_list;
    use crate::server::state;

    /// Every server as the list shows it, given every tool (which callers need too).
    pub async fn summaries(owner: &Owner, tools: &[ToolRecord]) -> Result<Vec<ServerSummary>, PanelError> {
        let state = state();
        let tenants = engine::service::tenants::all(&state, owner).await?;
        let servers = engine::service::servers::list(&state, owner).await?;
        Ok(servers.iter().map(|entry| summary(entry, &tenants, tools)).collect())
    }

    /// A server as the list shows it, given every tenant and tool.
    pub fn summary(entry: &ServerEntry, tenants: &[Tenant], tools: &[ToolRecord]) -> ServerSummary {
        let server = &entry.server;
        let name = server.source.name.clone();
        let connection = entry.connections.iter().find(|h| h.tenant_id.is_none());
        let own_tools: Vec<_> = tools.iter().filter(|t| t.source == name).collect();
        ServerSummary {
            transport: server.transport.as_str().into(),
            target: match &server.url {
                Some(url) => url.clone(),
                None => {
                    let line = std::iter::once(server.command.clone().unwrap_or_default())
                        .chain(server.args.iter().cloned())
                        .collect::<Vec<_>>()
                        .join(" ");
                    match &server.cwd {
                        Some(cwd) => format!("{line} (in {cwd})"),
                        None => line,
                    }
                }
            },
            tags: server.source.tags.clone(),
            scope: server
                .source
                .tenant_id
                .and_then(|id| tenants.iter().find(|t| t.id == id).map(|t| t.slug.clone()))
                .unwrap_or_else(|| "shared".into()),
            enabled: server.source.enabled,
            status: status(entry),
            last_error: connection.and_then(|c| c.last_error.clone()),
            protocol: connection.and_then(|c| c.protocol.clone()),
            tool_count: own_tools.len(),
            awaiting: own_tools.iter().filter(|t| t.held || t.pending).count(),
            name,
        }
    }

    /// How a server is doing: disabled, or its shared connection's status.
    pub fn status(entry: &ServerEntry) -> String {
        let connection = entry.connections.iter().find(|h| h.tenant_id.is_none());
        match (entry.server.source.enabled, connection) {
            (false, _) => "disabled".into(),
            (true, Some(c)) => c.status.as_str().into(),
            (true, None) => "connecting".into(),
        }
    }

    fn invalid(message: impl ToString) -> PanelError {
        PanelError::rejected(StatusCode::UNPROCESSABLE_ENTITY, message)
    }

    /// The form as a server configuration, or what is wrong with it.
    pub fn config(form: &ServerForm) -> Result<ServerConfig, PanelError> {
        let name = Name::parse(form.name.trim()).map_err(invalid)?;
        let transport = match form.transport.as_str() {
            "streamable_http" => Transport::StreamableHttp,
            "sse" => Transport::Sse,
            "stdio" => Transport::Stdio,
            other => return Err(invalid(format!("unknown transport `{other}`"))),
        };
        let mut headers = BTreeMap::new();
        for line in form.headers.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (key, value) = line
                .split_once(':')
                .ok_or_else(|| invalid(format!("header line `{line}` is not `Name: value`")))?;
            headers.insert(key.trim().to_string(), SecretInput::Value(value.trim().to_string()));
        }
        let mut env = BTreeMap::new();
        for line in form.env.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| invalid(format!("environment line `{line}` is not `NAME=value`")))?;
            env.insert(key.trim().to_string(), EnvValue::Secret(SecretInput::Value(value.to_string())));
        }
        let tags = comma_list(&form.tags)
            .iter()
            .map(|t| Tag::parse(t))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let tenant = match form.tenant.trim() {
            "" => None,
            slug => Some(TenantSlug::parse(slug).map_err(invalid)?),
        };
        let text = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        Ok(ServerConfig {
            transport,
            prefix: text(&form.prefix),
            url: if transport == Transport::Stdio { None } else { text(&form.url) },
            command: if transport == Transport::Stdio { text(&form.command) } else { None },
            args: form.args.lines().map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect(),
            cwd: if transport == Transport::Stdio { text(&form.cwd) } else { None },
            env: if transport == Transport::Stdio { env } else { BTreeMap::new() },
            headers,
            tags,
            tenant,
            on_definition_change: if form.on_definition_change == "keep_pinned" {
                OnDefinitionChange::KeepPinned
            } else {
                OnDefinitionChange::Hold
            },
            new_tools_enabled: form.new_tools_enabled,
            ..ServerConfig::http(name, "")
        })
    }
}

#[server]
pub async fn list_servers() -> Result<Vec<ServerSummary>, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let tools = engine::service::servers::tools(&state(), &owner).await?;
    ssr::summaries(&owner, &tools).await
}

#[server]
pub async fn register_server(form: ServerForm) -> Result<String, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let config = ssr::config(&form)?;
    engine::service::servers::create(&state(), &owner, &config).await?;
    Ok(config.name.to_string())
}

#[server]
pub async fn test_server(form: ServerForm) -> Result<TestOutcome, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let config = ssr::config(&form)?;
    Ok(match engine::service::servers::probe(&state(), &owner, &config).await? {
        Ok(probe) => {
            let name = probe.server_name().unwrap_or("the server");
            TestOutcome { ok: true, message: format!("Connected to {name}: {} tools.", probe.tool_count) }
        }
        Err(err) => TestOutcome { ok: false, message: err.to_string() },
    })
}

/// A server's page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerView {
    pub summary: ServerSummary,
    pub tools: Vec<ServerTool>,
    pub pending: Vec<PendingDefinition>,
    pub health: ServerHealth,
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
    pub p50_ms: f64,
    pub p95_ms: f64,
    /// The newest calls that failed or timed out.
    pub failures: Vec<Failure>,
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

/// A definition change: what is pinned and what the upstream publishes now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingDefinition {
    pub tool_id: String,
    pub tool: String,
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
    let summary = ssr::summary(&detail.entry, &tenants, &detail.tools);
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
    let pending = detail
        .pending
        .into_iter()
        .map(|p| PendingDefinition {
            tool_id: p.tool_id.to_string(),
            tool: p.upstream_name,
            pinned: serde_json::to_value(p.pinned).unwrap_or_default(),
            pending: serde_json::to_value(p.pending).unwrap_or_default(),
        })
        .collect();
    let (activity, failures) = engine::service::servers::calls(&state, &owner, &server).await?;
    let hour = activity.sources.into_iter().next();
    let own = detail.entry.connections.iter().find(|h| h.tenant_id.is_none());
    let health = ServerHealth {
        last_seen_secs: own.and_then(|h| h.last_seen_secs),
        last_error: own.and_then(|h| Some((h.last_error.clone()?, h.last_error_secs?))),
        calls: hour.as_ref().map_or(0, |h| h.calls),
        errors: hour.as_ref().map_or(0, |h| h.errors),
        p50_ms: hour.as_ref().map_or(0.0, |h| h.p50_ms),
        p95_ms: hour.as_ref().map_or(0.0, |h| h.p95_ms),
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
    Ok(ServerView { summary, tools, pending, health })
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
            "Last hour: {} calls, {} errors, p50 {:.1} ms, p95 {:.1} ms.",
            health.calls, health.errors, health.p50_ms, health.p95_ms
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
}

/// Does `command` to the server `name` (and to the tool `tool_id` for a tool's command).
#[server]
pub async fn server_command(
    name: String,
    command: ServerOp,
    tool_id: Option<String>,
) -> Result<String, PanelError> {
    use axum::http::StatusCode;
    use engine::service::servers;

    use crate::server::{owner, state};
    let owner = owner().await?;
    let state = state();
    let server = engine::model::Name::parse(&name).map_err(engine::Error::from)?;
    let tool = || {
        tool_id
            .as_deref()
            .and_then(|id| id.parse::<uuid::Uuid>().ok())
            .ok_or_else(|| PanelError::rejected(StatusCode::BAD_REQUEST, "which tool?"))
    };
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
    };
    Ok(done)
}

#[component]
pub fn ServersPage() -> impl IntoView {
    let register = ServerAction::<RegisterServer>::new();
    let registered = succeeded(register);
    let servers = Resource::new(move || registered.get(), |_| list_servers());
    view! {
        <Title text="Servers" />
        <h1>"Servers"</h1>
        {loaded(servers, |servers| view! { <ServerTable servers /> })}
        <RegisterForm register />
    }
}

#[component]
fn ServerTable(servers: Vec<ServerSummary>) -> impl IntoView {
    if servers.is_empty() {
        return view! { <p class="muted">"No MCP server is registered yet."</p> }.into_any();
    }
    view! {
        <div class="scroll">
        <table class="grid">
            <thead>
                <tr>
                    <th>"Server"</th>
                    <th>"Status"</th>
                    <th>"Tools"</th>
                    <th>"Tags"</th>
                    <th>"Scope"</th>
                    <th>"Last error"</th>
                </tr>
            </thead>
            <tbody>
                {servers
                    .into_iter()
                    .map(|s| {
                        view! {
                            <tr>
                                <td>
                                    <a href=format!("/servers/{}", s.name)>{s.name.clone()}</a>
                                    <div class="muted small">{s.transport} " · " {s.target}</div>
                                </td>
                                <td>
                                    <StatusBadge status=s.status />
                                </td>
                                <td>
                                    {s.tool_count}
                                    {(s.awaiting > 0)
                                        .then(|| {
                                            view! {
                                                <span class="status status-pending">
                                                    {s.awaiting} " awaiting approval"
                                                </span>
                                            }
                                        })}
                                </td>
                                <td>{s.tags.join(", ")}</td>
                                <td>{s.scope}</td>
                                <td class="small">{s.last_error.unwrap_or_default()}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
        </div>
    }
    .into_any()
}

/// A text input bound to a signal.
#[component]
fn Field(
    label: &'static str,
    value: RwSignal<String>,
    #[prop(optional)] placeholder: &'static str,
    #[prop(optional)] name: &'static str,
) -> impl IntoView {
    view! {
        <label>
            {label}
            <input
                type="text"
                name=name
                placeholder=placeholder
                prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
            />
        </label>
    }
}

/// A text area bound to a signal, one entry per line.
#[component]
fn Lines(
    label: &'static str,
    value: RwSignal<String>,
    name: &'static str,
    #[prop(optional)] placeholder: &'static str,
    #[prop(default = 2)] rows: u8,
) -> impl IntoView {
    view! {
        <label>
            {label}
            <textarea
                name=name
                rows=rows
                placeholder=placeholder
                prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
            ></textarea>
        </label>
    }
}

#[component]
fn RegisterForm(register: ServerAction<RegisterServer>) -> impl IntoView {
    let test = ServerAction::<TestServer>::new();
    let (name, prefix, url, command) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let (args, cwd, headers, tags, tenant, env) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let transport = RwSignal::new("streamable_http".to_string());
    let on_change = RwSignal::new("hold".to_string());
    let new_tools = RwSignal::new(false);
    let form = move || ServerForm {
        name: name.get(),
        prefix: prefix.get(),
        transport: transport.get(),
        url: url.get(),
        command: command.get(),
        args: args.get(),
        cwd: cwd.get(),
        headers: headers.get(),
        env: env.get(),
        tags: tags.get(),
        tenant: tenant.get(),
        on_definition_change: on_change.get(),
        new_tools_enabled: new_tools.get(),
    };
    let busy = move || register.pending().get() || test.pending().get();
    let stdio = move || transport.get() == "stdio";
    // A registered server clears the form; a refused one keeps what was typed.
    Effect::new(move |_| {
        if let Some(Ok(_)) = register.value().get() {
            for field in [name, prefix, url, command, args, cwd, headers, env, tags, tenant] {
                field.set(String::new());
            }
        }
    });
    view! {
        <section class="card form-card">
            <h2>"Register a server"</h2>
            <div class="form-grid">
                <Field label="Name" value=name placeholder="everything" name="name" />
                <Field label="Prefix (default: the name)" value=prefix name="prefix" />
                <label>
                    "Transport"
                    <select
                        name="transport"
                        prop:value=move || transport.get()
                        on:change=move |ev| transport.set(event_target_value(&ev))
                    >
                        <option value="streamable_http">"Streamable HTTP"</option>
                        <option value="sse">"SSE (legacy)"</option>
                        <option value="stdio">"stdio (child process)"</option>
                    </select>
                </label>
                <Show
                    when=stdio
                    fallback=move || {
                        view! { <Field label="URL" value=url placeholder="http://127.0.0.1:3001/mcp" name="url" /> }
                    }
                >
                    <Field label="Command" value=command placeholder="npx" name="command" />
                    <Lines label="Arguments (one per line)" value=args name="args" rows=3 />
                    <Field
                        label="Working directory (absolute; empty = Toolgate's)"
                        value=cwd
                        placeholder="/srv/mcp/weather"
                        name="cwd"
                    />
                    <Lines
                        label="Environment (NAME=value per line; stored encrypted, never shown again)"
                        value=env
                        name="env"
                        placeholder="API_KEY=..."
                    />
                    <p class="muted form-note">
                        "The process starts with a cleared environment: PATH, HOME and LANG of Toolgate's, \
                         plus the variables above; nothing else of Toolgate's, so never its secret key or \
                         database URL."
                    </p>
                </Show>
                <Lines
                    label="Headers (Name: value per line; stored encrypted, never shown again)"
                    value=headers
                    name="headers"
                    placeholder="Authorization: Bearer ..."
                />
                <Field label="Tags (comma-separated)" value=tags name="tags" />
                <Field label="Tenant (empty = shared by all tenants)" value=tenant name="tenant" />
                <label>
                    "When a pinned tool's definition changes"
                    <select
                        name="on_definition_change"
                        prop:value=move || on_change.get()
                        on:change=move |ev| on_change.set(event_target_value(&ev))
                    >
                        <option value="hold">"Hold the tool until approved"</option>
                        <option value="keep_pinned">"Keep serving the pinned definition"</option>
                    </select>
                </label>
                <label class="check">
                    <input
                        type="checkbox"
                        prop:checked=move || new_tools.get()
                        on:change=move |ev| new_tools.set(event_target_checked(&ev))
                    />
                    "Serve tools that appear later without approval"
                </label>
            </div>
            <div class="actions">
                <button type="button" disabled=busy on:click=move |_| { test.dispatch(TestServer { form: form() }); }>
                    {move || if test.pending().get() { "Testing…" } else { "Test connection" }}
                </button>
                <button
                    type="button"
                    class="primary"
                    disabled=busy
                    on:click=move |_| { register.dispatch(RegisterServer { form: form() }); }
                >
                    {move || if register.pending().get() { "Registering…" } else { "Register" }}
                </button>
            </div>
            {move || {
                test.value()
                    .get()
                    .and_then(Result::ok)
                    .map(|outcome| {
                        let class = if outcome.ok { "notice ok" } else { "notice error" };
                        view! { <p class=class role="status">{outcome.message}</p> }
                    })
            }}
            <ErrorNote error=action_error(test) />
            <ErrorNote error=action_error(register) />
            {move || {
                register.value()
                    .get()
                    .and_then(Result::ok)
                    .map(|name| view! { <p class="notice ok" role="status">"Registered " {name} "."</p> })
            }}
        </section>
    }
}

#[component]
pub fn ServerPage() -> impl IntoView {
    let params = use_params_map();
    let name = move || params.read().get("name").unwrap_or_default();
    let command = ServerAction::<ServerCommand>::new();
    let commanded = succeeded(command);
    let detail = Resource::new(move || (name(), commanded.get()), |(name, _)| server_detail(name));
    let deleted = move || matches!(command.value().get(), Some(Ok(ref done)) if done.ends_with("deleted"));
    let run = move |what: ServerOp, tool: Option<String>| {
        command.dispatch(ServerCommand { name: name(), command: what, tool_id: tool });
    };
    view! {
        <Title text=move || format!("Server {}", name()) />
        <p>
            <a href="/servers">"← Servers"</a>
        </p>
        <h1>{name}</h1>
        <Show when=deleted fallback=move || ()>
            <p class="notice ok">"The server was deleted."</p>
        </Show>
        {move || {
            command.value()
                .get()
                .and_then(Result::ok)
                .map(|done| view! { <p class="notice ok" role="status">{done}</p> })
        }}
        <ErrorNote error=action_error(command) />
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
                        <Confirm
                            ask="Delete…"
                            confirm="Delete the server and its tools"
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
                }
            },
        )}
    }
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
            "The upstream now describes these tools differently. Until you decide, the pinned definition is served or the tool is held back."
        </p>
        {pending
            .into_iter()
            .map(|p| {
                let (approve_id, reject_id) = (p.tool_id.clone(), p.tool_id.clone());
                view! {
                    <section class="card diff">
                        <h3>{p.tool.clone()}</h3>
                        <div class="side-by-side">
                            <JsonBlock label="Pinned (served)" value=p.pinned />
                            <JsonBlock label="Published now" value=p.pending />
                        </div>
                        <div class="actions">
                            <button type="button" class="primary" on:click=move |_| run(ServerOp::Approve, Some(approve_id.clone()))>
                                "Approve the new definition"
                            </button>
                            <button type="button" on:click=move |_| run(ServerOp::Reject, Some(reject_id.clone()))>
                                "Reject (hold the tool)"
                            </button>
                        </div>
                    </section>
                }
            })
            .collect_view()}
    }
    .into_any()
}
