//! Registering a server, or editing one in place: the form, its connection test, and the
//! configuration it makes.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::PanelError;
use crate::pages::ui::{ErrorNote, JsonBlock, action_error, counted};

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
    /// `""` (no OAuth), `shared`, `tenant`, `user`, or `machine` (client credentials).
    pub oauth: String,
    /// A client registered with the provider; empty = Toolgate registers itself.
    pub oauth_client_id: String,
    pub oauth_client_secret: String,
    /// Space- or comma-separated.
    pub oauth_scopes: String,
}

/// What an edit form shows for a stored secret (a header's, a variable's, the OAuth client
/// secret's value): left so, the stored value is kept, as `{set: true}` keeps it in the
/// configuration document.
pub const KEPT: &str = "(kept)";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestOutcome {
    pub ok: bool,
    pub message: String,
    /// The tools the server lists: name, description, input schema.
    pub tools: Vec<(String, String, serde_json::Value)>,
}

/// What a save did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SaveOutcome {
    /// Registered, or saved: the server's name.
    Done(String),
    /// Not registered: its connection test failed, with this; registering it anyway is the
    /// administrator's explicit choice.
    Unreachable(String),
}
#[cfg(feature = "ssr")]
mod ssr {
    use std::collections::BTreeMap;

    use axum::http::StatusCode;
    use engine::model::{Name, Tag, TenantSlug};
    use engine::service::SecretInput;
    use engine::service::servers::{
        EnvValue, OAuthGrant, OAuthMode, OAuthSettings, OnDefinitionChange, Server, ServerConfig, Transport,
    };

    use super::{KEPT, ServerForm};
    use crate::error::PanelError;
    use crate::server::comma_list;

    fn invalid(message: impl ToString) -> PanelError {
        PanelError::rejected(StatusCode::UNPROCESSABLE_ENTITY, message)
    }

    /// A secret as typed: [`KEPT`] keeps the stored value.
    fn secret(value: &str) -> SecretInput {
        if value == KEPT { SecretInput::SET } else { SecretInput::Value(value.to_string()) }
    }

    /// The form that edits `server` (of the tenant `tenant`, if not shared): stored secrets show
    /// as [`KEPT`].
    pub fn form_of(server: &Server, tenant: Option<String>) -> ServerForm {
        let oauth = server.oauth.as_ref();
        ServerForm {
            name: server.source.name.clone(),
            prefix: server.source.prefix.clone(),
            transport: server.transport.as_str().to_string(),
            url: server.url.clone().unwrap_or_default(),
            command: server.command.clone().unwrap_or_default(),
            args: server.args.join("\n"),
            cwd: server.cwd.clone().unwrap_or_default(),
            headers: server.header_names.iter().map(|name| format!("{name}: {KEPT}\n")).collect(),
            env: server
                .env
                .iter()
                .map(|(name, value)| match value {
                    EnvValue::Plain(plain) => format!("{name}={plain}\n"),
                    EnvValue::Secret(_) => format!("{name}={KEPT}\n"),
                })
                .collect(),
            tags: server.source.tags.join(", "),
            tenant: tenant.unwrap_or_default(),
            on_definition_change: match server.on_definition_change {
                OnDefinitionChange::KeepPinned => "keep_pinned",
                OnDefinitionChange::Hold => "hold",
            }
            .into(),
            new_tools_enabled: server.new_tools_enabled,
            oauth: match oauth.map(|o| (o.mode, o.grant)) {
                None => "",
                Some((_, OAuthGrant::ClientCredentials)) => "machine",
                Some((OAuthMode::Shared, _)) => "shared",
                Some((OAuthMode::Tenant, _)) => "tenant",
                Some((OAuthMode::User, _)) => "user",
            }
            .into(),
            oauth_client_id: oauth.and_then(|o| o.client_id.clone()).unwrap_or_default(),
            oauth_client_secret: oauth
                .and_then(|o| o.client_secret.as_ref())
                .map(|_| KEPT.into())
                .unwrap_or_default(),
            oauth_scopes: oauth.map(|o| o.scopes.join(" ")).unwrap_or_default(),
        }
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
            headers.insert(key.trim().to_string(), secret(value.trim()));
        }
        let mut env = BTreeMap::new();
        for line in form.env.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| invalid(format!("environment line `{line}` is not `NAME=value`")))?;
            env.insert(key.trim().to_string(), EnvValue::Secret(secret(value)));
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
        let (mode, grant) = match form.oauth.as_str() {
            "" => (None, OAuthGrant::AuthorizationCode),
            "shared" => (Some(OAuthMode::Shared), OAuthGrant::AuthorizationCode),
            "tenant" => (Some(OAuthMode::Tenant), OAuthGrant::AuthorizationCode),
            "user" => (Some(OAuthMode::User), OAuthGrant::AuthorizationCode),
            "machine" => (Some(OAuthMode::Shared), OAuthGrant::ClientCredentials),
            other => return Err(invalid(format!("unknown OAuth mode `{other}`"))),
        };
        let oauth = mode.map(|mode| OAuthSettings {
            mode,
            grant,
            client_id: text(&form.oauth_client_id),
            client_secret: text(&form.oauth_client_secret).as_deref().map(secret),
            scopes: form
                .oauth_scopes
                .split([' ', ','])
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        });
        Ok(ServerConfig {
            oauth,
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

/// Registers the server once its connection test passes (or `anyway`), or with `editing`
/// replaces the settings of the one of its name (which stays enabled or disabled as it was).
#[server]
pub async fn save_server(form: ServerForm, editing: bool, anyway: bool) -> Result<SaveOutcome, PanelError> {
    use engine::service::servers;

    use crate::server::{owner, state};
    let owner = owner().await?;
    let state = state();
    let mut config = ssr::config(&form)?;
    if editing {
        config.enabled = servers::get(&state, &owner, &config.name).await?.source.enabled;
        servers::update(&state, &owner, &config).await?;
    } else {
        if !anyway && let Err(err) = servers::probe(&state, &owner, &config).await? {
            return Ok(SaveOutcome::Unreachable(err.to_string()));
        }
        servers::create(&state, &owner, &config).await?;
    }
    Ok(SaveOutcome::Done(config.name.to_string()))
}

/// The form that edits the server `name`, as it is stored.
#[server]
pub async fn stored_server_form(name: String) -> Result<ServerForm, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let name = engine::model::Name::parse(&name).map_err(engine::Error::from)?;
    let server = engine::service::servers::get(&state(), &owner, &name).await?;
    let tenant = match server.source.tenant_id {
        Some(id) => engine::service::tenants::all(&state(), &owner)
            .await?
            .into_iter()
            .find(|t| t.id == id)
            .map(|t| t.slug),
        None => None,
    };
    Ok(ssr::form_of(&server, tenant))
}

#[server]
pub async fn test_server(form: ServerForm) -> Result<TestOutcome, PanelError> {
    use crate::server::{owner, state};
    let owner = owner().await?;
    let config = ssr::config(&form)?;
    Ok(match engine::service::servers::probe(&state(), &owner, &config).await? {
        Ok(probe) if probe.authorization_server.is_some() => TestOutcome {
            ok: true,
            message: format!(
                "The server is protected by OAuth; its authorization server is {}. Register it, then authorize it on its page.",
                probe.authorization_server.unwrap_or_default()
            ),
            tools: Vec::new(),
        },
        Ok(probe) => {
            let name = probe.server_name().unwrap_or("the server");
            TestOutcome {
                ok: true,
                message: format!("Connected to {name}: {}.", counted(probe.tools.len() as i64, "tool")),
                tools: probe.tools.into_iter().map(|t| (t.name, t.description, t.input_schema)).collect(),
            }
        }
        Err(err) => TestOutcome { ok: false, message: err.to_string(), tools: Vec::new() },
    })
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

/// A labelled choice among `options` (value, label).
#[component]
fn Choice(
    label: &'static str,
    name: &'static str,
    value: RwSignal<String>,
    options: &'static [(&'static str, &'static str)],
) -> impl IntoView {
    view! {
        <label>
            {label}
            <select name=name prop:value=move || value.get() on:change=move |ev| value.set(event_target_value(&ev))>
                {options.iter().map(|(value, label)| view! { <option value=*value>{*label}</option> }).collect_view()}
            </select>
        </label>
    }
}

/// The form that registers a server, or with `editing` (the stored server as a form) changes
/// that one in place.
#[component]
pub(super) fn ServerFormCard(
    save: ServerAction<SaveServer>,
    #[prop(optional)] editing: Option<ServerForm>,
) -> impl IntoView {
    let test = ServerAction::<TestServer>::new();
    let creating = editing.is_none();
    let start = editing.unwrap_or_else(|| ServerForm {
        transport: "streamable_http".into(),
        on_definition_change: "hold".into(),
        ..ServerForm::default()
    });
    let (name, prefix, url, command) = (
        RwSignal::new(start.name),
        RwSignal::new(start.prefix),
        RwSignal::new(start.url),
        RwSignal::new(start.command),
    );
    let (args, cwd, headers, tags, tenant, env) = (
        RwSignal::new(start.args),
        RwSignal::new(start.cwd),
        RwSignal::new(start.headers),
        RwSignal::new(start.tags),
        RwSignal::new(start.tenant),
        RwSignal::new(start.env),
    );
    let transport = RwSignal::new(start.transport);
    let (oauth, client_id, client_secret, scopes) = (
        RwSignal::new(start.oauth),
        RwSignal::new(start.oauth_client_id),
        RwSignal::new(start.oauth_client_secret),
        RwSignal::new(start.oauth_scopes),
    );
    let on_change = RwSignal::new(start.on_definition_change);
    let new_tools = RwSignal::new(start.new_tools_enabled);
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
        oauth: oauth.get(),
        oauth_client_id: client_id.get(),
        oauth_client_secret: client_secret.get(),
        oauth_scopes: scopes.get(),
    };
    let busy = move || save.pending().get() || test.pending().get();
    let stdio = move || transport.get() == "stdio";
    // A registered server clears the form; a refused one keeps what was typed (as does an edit).
    Effect::new(move |_| {
        if creating && let Some(Ok(SaveOutcome::Done(_))) = save.value().get() {
            for field in [
                name,
                prefix,
                url,
                command,
                args,
                cwd,
                headers,
                env,
                tags,
                tenant,
                oauth,
                client_id,
                client_secret,
                scopes,
            ] {
                field.set(String::new());
            }
        }
    });
    view! {
        <section class="card form-card">
            <h2>{if creating { "Register a server" } else { "Edit the server" }}</h2>
            {(!creating).then(|| view! {
                <p class="muted form-note">
                    "A stored secret shows as " <code>{KEPT}</code> " and is kept as long as it stays so. \
                     A new URL or command drops what tenants gave the server."
                </p>
            })}
            <div class="form-grid">
                {creating.then(|| view! { <Field label="Name" value=name placeholder="everything" name="name" /> })}
                <Field label="Prefix (default: the name)" value=prefix name="prefix" />
                <Choice
                    label="Transport"
                    name="transport"
                    value=transport
                    options=&[
                        ("streamable_http", "Streamable HTTP"),
                        ("sse", "SSE (legacy)"),
                        ("stdio", "stdio (child process)"),
                    ]
                />
                <Show
                    when=stdio
                    fallback=move || {
                        // The legacy transport's URL is its event stream's.
                        let placeholder = if transport.get() == "sse" { "http://127.0.0.1:3001/sse" } else { "http://127.0.0.1:3001/mcp" };
                        view! { <Field label="URL" value=url placeholder name="url" /> }
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
                <Show when=move || transport.get() == "streamable_http" fallback=|| ()>
                    <Choice
                        label="OAuth (the server's own sign-in)"
                        name="oauth"
                        value=oauth
                        options=&[
                            ("", "None"),
                            ("shared", "OAuth: one account for every tenant"),
                            ("tenant", "OAuth: each tenant's own account"),
                            ("user", "OAuth: each person's own account"),
                            ("machine", "OAuth: client credentials (machine to machine)"),
                        ]
                    />
                    <Show when=move || !oauth.get().is_empty() fallback=|| ()>
                        <Field
                            label="OAuth client id (empty = Toolgate registers itself)"
                            value=client_id
                            name="oauth_client_id"
                        />
                        <Field label="OAuth client secret (stored encrypted)" value=client_secret name="oauth_client_secret" />
                        <Field label="OAuth scopes (empty = the server's)" value=scopes name="oauth_scopes" />
                        <p class="muted form-note">
                            "After registering, authorize the server on its page (per-person servers: each person \
                             connects their account on first use). A provider that needs the callback URL: "
                            <code>"<Toolgate's URL>/oauth/upstream/callback"</code>
                        </p>
                    </Show>
                </Show>
                <Show when=move || !stdio() fallback=|| ()>
                    <Lines
                        label="Headers (Name: value per line; stored encrypted, never shown again)"
                        value=headers
                        name="headers"
                        placeholder="Authorization: Bearer ..."
                    />
                </Show>
                <Field label="Tags (comma-separated)" value=tags name="tags" />
                <Field label="Tenant (empty = shared by all tenants)" value=tenant name="tenant" />
                <Choice
                    label="When a pinned tool's definition changes"
                    name="on_definition_change"
                    value=on_change
                    options=&[
                        ("hold", "Hold the tool until approved"),
                        ("keep_pinned", "Keep serving the pinned definition"),
                    ]
                />
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
                    on:click=move |_| { save.dispatch(SaveServer { form: form(), editing: !creating, anyway: false }); }
                >
                    {move || match (creating, save.pending().get()) {
                        (true, true) => "Registering…",
                        (true, false) => "Register",
                        (false, true) => "Saving…",
                        (false, false) => "Save changes",
                    }}
                </button>
            </div>
            {move || {
                test.value()
                    .get()
                    .and_then(Result::ok)
                    .map(|outcome| {
                        let class = if outcome.ok { "notice ok" } else { "notice error" };
                        view! {
                            <p class=class role="status">{outcome.message}</p>
                            {(!outcome.tools.is_empty()).then(|| probed_tools(outcome.tools))}
                        }
                    })
            }}
            <ErrorNote error=action_error(test) />
            <ErrorNote error=action_error(save) />
            {move || {
                save.value().get().and_then(Result::ok).map(|saved| match saved {
                    SaveOutcome::Done(name) => {
                        let done = if creating { "Registered" } else { "Saved" };
                        view! { <p class="notice ok" role="status">{format!("{done} {name}.")}</p> }.into_any()
                    }
                    SaveOutcome::Unreachable(why) => view! {
                        <p class="notice error" role="status">
                            {format!("Not registered: the connection test failed: {why}")}
                        </p>
                        <button
                            type="button"
                            disabled=busy
                            on:click=move |_| { save.dispatch(SaveServer { form: form(), editing: false, anyway: true }); }
                        >
                            "Register it anyway"
                        </button>
                    }
                    .into_any(),
                })
            }}
        </section>
    }
}

/// The tools a tested server lists, each with its input schema.
fn probed_tools(tools: Vec<(String, String, serde_json::Value)>) -> impl IntoView {
    view! {
        <details class="probed-tools" open>
            <summary>{format!("What it lists ({})", counted(tools.len() as i64, "tool"))}</summary>
            <ul class="plain">
                {tools
                    .into_iter()
                    .map(|(name, description, schema)| view! {
                        <li>
                            <code>{name.clone()}</code> " " <span class="muted">{description}</span>
                            <details>
                                <summary>"Input schema"</summary>
                                <JsonBlock value=schema label=format!("{name}: input schema") />
                            </details>
                        </li>
                    })
                    .collect_view()}
            </ul>
        </details>
    }
}
