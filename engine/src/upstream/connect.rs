//! Opening a connection to an upstream server, over any of its transports.

use std::collections::HashMap;
use std::sync::Weak;
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, ServiceError,
};
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};
use rmcp::transport::{DynamicTransportError, StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;

use super::commands::stdio_refusal;
use super::handler::Handler;
use super::oauth::Token;
use super::session::{SessionWatch, Watched};
use super::slot::list_tools;
use super::sse;
use super::stderr::StderrTail;
use super::{ProbedTool, ServerProbe, UpstreamConfig};
use crate::model::UpstreamError;
use crate::store::servers::{Endpoint, Transport};

/// Connects once, lists the tools, disconnects.
pub async fn test_connection(
    endpoint: &Endpoint,
    config: &UpstreamConfig,
) -> Result<ServerProbe, UpstreamError> {
    let handler = Handler { slot: Weak::new(), connection: 0 };
    let client = Watched { client: http_client(config), watch: SessionWatch::default() };
    let service = tokio::time::timeout(
        config.connect_timeout,
        connect(endpoint, handler, client, None, &config.stdio_commands, &StderrTail::default()),
    )
    .await
    .map_err(|_| UpstreamError::ConnectTimeout(config.connect_timeout))??;
    let server_info = serde_json::to_value(service.peer().peer_info()).unwrap_or(Value::Null);
    let tools = match tokio::time::timeout(config.connect_timeout, list_tools(service.peer())).await {
        Ok(listed) => listed.map_err(|e| UpstreamError::Listing(service_failure(&e))),
        Err(_) => Err(UpstreamError::ListingTimeout(config.connect_timeout)),
    };
    service.cancellation_token().cancel();
    let tools = tools?
        .into_iter()
        .map(|tool| ProbedTool {
            description: tool.description.as_deref().unwrap_or_default().to_string(),
            input_schema: Value::Object((*tool.input_schema).clone()),
            name: tool.name.into_owned(),
        })
        .collect();
    Ok(ServerProbe { server_info, tools, authorization_server: None })
}

/// The HTTP client of upstream connections.
pub(super) fn http_client(config: &UpstreamConfig) -> reqwest::Client {
    reqwest::Client::builder()
        // A redirect could carry a server's credentials elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        // Connections stay warm under load; one idle for 2 s is closed (well before servers
        // close theirs: uvicorn after 5 s), so none outlives its traffic for long.
        .pool_idle_timeout(Duration::from_secs(2))
        .connect_timeout(config.connect_timeout)
        .build()
        .expect("an HTTP client without TLS builds")
}

/// What a stdio server gets of Toolgate's environment, besides its own configured `env`:
/// enough to find programs and a home folder, never Toolgate's settings or secrets
/// (`TOOLGATE_SECRET_KEY` decrypts every stored credential).
const INHERITED_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];

/// Connects to `endpoint`: over streamable HTTP with `http` (its session watched), with `token`
/// on every request to an OAuth server; a stdio server only when `stdio_commands`
/// (`TOOLGATE_STDIO_COMMANDS`) allows its program, its standard error kept in `stderr`.
pub(super) async fn connect(
    endpoint: &Endpoint,
    handler: Handler,
    http: Watched<reqwest::Client>,
    token: Option<&Token>,
    stdio_commands: &[String],
    stderr: &StderrTail,
) -> Result<rmcp::service::RunningService<RoleClient, Handler>, UpstreamError> {
    match endpoint.transport {
        Transport::Stdio => {
            let program = endpoint.command.as_deref().unwrap_or_default();
            // Checked when the server was saved too, but the list may have changed since.
            let env = endpoint.env.iter().map(|(name, _)| name.as_str());
            if let Some(refusal) = stdio_refusal(stdio_commands, program, env) {
                return Err(UpstreamError::NotAllowed(refusal));
            }
            let mut command = tokio::process::Command::new(program);
            if let Some(cwd) = &endpoint.cwd {
                // Spawning in a missing directory fails as if the program were missing.
                if !std::path::Path::new(cwd).is_dir() {
                    return Err(UpstreamError::Spawn(format!(
                        "the working directory `{cwd}` is not a directory here"
                    )));
                }
                command.current_dir(cwd);
            }
            let inherited = INHERITED_ENV.iter().filter_map(|name| Some((*name, std::env::var_os(name)?)));
            command
                .args(&endpoint.args)
                .env_clear()
                .envs(inherited)
                .envs(endpoint.env.iter().cloned())
                .kill_on_drop(true);
            let (transport, output) = TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| UpstreamError::Spawn(format!("`{program}`: {e}")))?;
            let mark = stderr.mark();
            let secrets = endpoint.env.iter().map(|(_, value)| value.clone()).collect();
            let reading = output.map(|output| stderr.follow(output, program, secrets));
            match start(handler, transport).await {
                Ok(service) => Ok(service),
                Err(failure) => {
                    // The program is gone (or killed with its transport): what it said last is
                    // read to its end, briefly.
                    if let Some(reading) = reading {
                        let _ = tokio::time::timeout(STDERR_DRAIN, reading).await;
                    }
                    let command = program.to_string();
                    Err(UpstreamError::Stdio {
                        command,
                        failure: Box::new(failure),
                        stderr: stderr.quote_since(mark),
                    })
                }
            }
        }
        Transport::StreamableHttp => {
            let url = endpoint.url.clone().unwrap_or_default();
            let config = StreamableHttpClientTransportConfig::with_uri(url)
                .custom_headers(custom_headers(endpoint)?)
                .max_sse_event_size(MAX_ANSWER)
                .max_json_response_size(MAX_ANSWER);
            match token {
                Some(token) => {
                    let client = Watched { client: token.client.clone(), watch: http.watch };
                    start(handler, StreamableHttpClientTransport::with_client(client, config)).await
                }
                None => start(handler, StreamableHttpClientTransport::with_client(http, config)).await,
            }
        }
        Transport::Sse => {
            let url = endpoint.url.as_deref().unwrap_or_default();
            let transport = sse::SseTransport::connect(url, headers(endpoint)?, MAX_ANSWER, SSE_POST_TIMEOUT)
                .await
                .map_err(|e| UpstreamError::EventStream(e.to_string()))?;
            start(handler, transport).await
        }
    }
}

/// How long a stdio server that failed to start has to finish writing its standard error.
const STDERR_DRAIN: Duration = Duration::from_secs(1);

/// The largest answer (one JSON body or SSE event) read from an HTTP upstream; a larger one
/// ends the connection rather than Toolgate's memory.
pub(super) const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// The longest a message POSTed to a legacy SSE server may take to be accepted.
const SSE_POST_TIMEOUT: Duration = Duration::from_secs(30);

/// The endpoint's HTTP headers, checked.
pub(super) fn headers(endpoint: &Endpoint) -> Result<http::HeaderMap, UpstreamError> {
    let mut headers = http::HeaderMap::new();
    for (name, value) in &endpoint.headers {
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|e| UpstreamError::HeaderName { name: name.clone(), reason: e.to_string() })?;
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|_| UpstreamError::HeaderValue(name.to_string()))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// The endpoint's headers, as rmcp's streamable HTTP client takes them.
pub(super) fn custom_headers(
    endpoint: &Endpoint,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, UpstreamError> {
    Ok(headers(endpoint)?.into_iter().filter_map(|(name, value)| Some((name?, value))).collect())
}

/// Starts the MCP lifecycle on `transport`: `server/discover` first (revision 2026-07-28), the
/// `initialize` handshake for a server that does not know it.
async fn start<T, E, A>(
    handler: Handler,
    transport: T,
) -> Result<rmcp::service::RunningService<RoleClient, Handler>, UpstreamError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    handler.serve_with_lifecycle(transport, lifecycle).await.map_err(|e| match refusal(&e) {
        Some(challenge) => UpstreamError::Refused(challenge),
        None => UpstreamError::Initialise(lifecycle_failure(&e)),
    })
}

/// What went wrong in the lifecycle as it happened — the transport's error and its causes
/// (refused, timed out, a certificate…) — not in rmcp's type names.
fn lifecycle_failure(err: &ClientInitializeError) -> String {
    match err {
        ClientInitializeError::TransportError { error, .. } => transport_failure(error),
        ClientInitializeError::ConnectionClosed(awaited) => {
            format!("the connection closed before the server's {awaited}")
        }
        other => other.to_string(),
    }
}

/// What went wrong with a request on a connection, in plain words (never rmcp's type names).
pub(super) fn service_failure(err: &ServiceError) -> String {
    match err {
        ServiceError::TransportSend(error) => transport_failure(error),
        ServiceError::TransportClosed => "the connection closed".into(),
        ServiceError::McpError(error) => format!("the server answered with an error: {}", error.message),
        other => other.to_string(),
    }
}

fn transport_failure(error: &DynamicTransportError) -> String {
    // rmcp's HTTP error does not give its client's error as its source: go in by hand.
    match error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(http)) => causes(http),
        _ => causes(&*error.error),
    }
}

/// An error and its causes, each said once: `sending failed: tcp connect error: refused`.
fn causes(err: &(dyn std::error::Error + 'static)) -> String {
    let mut said: Vec<String> = Vec::new();
    let mut next = Some(err);
    while let Some(err) = next {
        let text = err.to_string();
        if !said.iter().any(|earlier| earlier.contains(&text)) {
            said.push(text);
        }
        next = err.source();
    }
    said.join(": ")
}

/// The server's challenge, when it refused the lifecycle's request for its credentials.
fn refusal(err: &ClientInitializeError) -> Option<String> {
    let ClientInitializeError::TransportError { error, .. } = err else { return None };
    challenge_of(error)
}

/// The server's challenge, when it refused a request for its credentials (401, or 403 for want
/// of scope).
pub(super) fn challenge_of(error: &DynamicTransportError) -> Option<String> {
    let http = error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>()?;
    http.auth_challenge().map(str::to_string)
}

/// Whether the server speaks revision 2026-07-28 or later on this connection: it then sends
/// tool list changes only on a `subscriptions/listen` stream.
pub(super) fn is_stateless(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info().is_some_and(|info| !info.protocol_version.has_initialize())
}
