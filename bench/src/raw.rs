//! A plain HTTP/1.1 MCP client on one keep-alive connection, the way most non-rmcp clients
//! talk to a server (wrk, curl, many HTTP libraries): each request goes out in one write and
//! Nagle's algorithm is left on. rmcp's reqwest client sets `TCP_NODELAY` and so never shows
//! what such clients see when a server writes its answer in several small pieces.

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// The protocol revision the raw client negotiates (the handshake era).
const PROTOCOL_VERSION: &str = "2025-11-25";

/// One MCP session over one TCP connection.
pub struct RawMcp {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
    path: String,
    key: Option<String>,
    session: Option<String>,
    next_id: u64,
}

impl RawMcp {
    /// Connects to `url` (`http://host:port/path`), initialises a session and sends
    /// `notifications/initialized`.
    pub async fn connect(url: &str, key: Option<&str>) -> Result<Self> {
        let uri: hyper::Uri = url.parse().with_context(|| format!("`{url}` is not a URL"))?;
        let authority = uri.authority().context("the URL names no host")?.to_string();
        let stream = tokio::net::TcpStream::connect(&authority).await?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let mut client = RawMcp {
            sender,
            authority,
            path: uri.path().to_string(),
            key: key.map(str::to_string),
            session: None,
            next_id: 0,
        };
        client
            .request(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "raw-keep-alive", "version": "1"}
                }),
            )
            .await?;
        client.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
        Ok(client)
    }

    /// `tools/call`; the JSON-RPC result (an error result is an `Err`).
    pub async fn call(&mut self, tool: &str, arguments: &Value) -> Result<Value> {
        self.request("tools/call", json!({"name": tool, "arguments": arguments})).await
    }

    /// Sends one request and returns its result.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let answers =
            self.post(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        let answer = answers
            .into_iter()
            .find(|message| message["id"] == id)
            .with_context(|| format!("no answer to {method}"))?;
        match answer.get("result") {
            Some(result) => Ok(result.clone()),
            None => bail!("{method} failed: {}", answer["error"]),
        }
    }

    /// POSTs one JSON-RPC message; returns the messages of the answer (a JSON body or the
    /// `data:` lines of an SSE body).
    async fn post(&mut self, message: Value) -> Result<Vec<Value>> {
        let mut request = hyper::Request::post(&self.path)
            .header(hyper::header::HOST, &self.authority)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream");
        if let Some(key) = &self.key {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {key}"));
        }
        if let Some(session) = &self.session {
            request =
                request.header("mcp-session-id", session).header("mcp-protocol-version", PROTOCOL_VERSION);
        }
        let request = request.body(Full::new(Bytes::from(serde_json::to_vec(&message)?)))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str()?.to_string());
        }
        let body = response.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            bail!("HTTP {status}: {}", String::from_utf8_lossy(&body));
        }
        let body = std::str::from_utf8(&body)?;
        if body.trim_start().starts_with('{') {
            return Ok(vec![serde_json::from_str(body)?]);
        }
        Ok(body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect())
    }
}
