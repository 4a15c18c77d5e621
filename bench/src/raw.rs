//! Plain HTTP/1.1 clients on one keep-alive connection each, the way most non-rmcp clients
//! talk to a server (wrk, curl, many HTTP libraries): each request goes out in one write and
//! Nagle's algorithm is left on. rmcp's reqwest client sets `TCP_NODELAY` and so never shows
//! what such clients see when a server writes its answer in several small pieces.
//!
//! [`RawHttp`] posts JSON (the REST API); [`RawMcp`] speaks MCP on it in either protocol era.

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// One keep-alive HTTP/1.1 connection, with an API key.
pub struct RawHttp {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
    key: Option<String>,
}

impl RawHttp {
    /// Connects to `url`'s host; returns the connection and `url`'s path.
    pub async fn connect(url: &str, key: Option<&str>) -> Result<(Self, String)> {
        let uri: hyper::Uri = url.parse().with_context(|| format!("`{url}` is not a URL"))?;
        let authority = uri.authority().context("the URL names no host")?.to_string();
        let stream = tokio::net::TcpStream::connect(&authority).await?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        let http = RawHttp { sender, authority, key: key.map(str::to_string) };
        Ok((http, uri.path().to_string()))
    }

    /// POSTs JSON `body` to `path` with `headers`; a status other than success is an error.
    /// Returns the answer's headers and body.
    pub async fn post(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Result<(hyper::HeaderMap, Bytes)> {
        let response = self.send(hyper::Method::POST, path, headers, Some(body)).await?;
        let (parts, body) = response.into_parts();
        Ok((parts.headers, body.collect().await?.to_bytes()))
    }

    /// Sends a request with `headers` (and JSON `body`), and returns the answer as it starts,
    /// its body still to come; a status other than success is an error.
    pub async fn send(
        &mut self,
        method: hyper::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Result<hyper::Response<Incoming>> {
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, &self.authority)
            .header(hyper::header::CONTENT_TYPE, "application/json");
        if let Some(key) = &self.key {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {key}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = body.map(serde_json::to_vec).transpose()?.unwrap_or_default();
        let request = request.body(Full::new(Bytes::from(body)))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        if !response.status().is_success() {
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            bail!("HTTP {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok(response)
    }
}

/// The MCP revision a raw client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// 2025-11-25: a session, opened by `initialize`.
    Handshake,
    /// 2026-07-28: no session; each request carries the revision's metadata and headers.
    Current,
}

impl Revision {
    fn version(self) -> &'static str {
        match self {
            Revision::Handshake => "2025-11-25",
            Revision::Current => "2026-07-28",
        }
    }
}

/// An MCP client on one keep-alive connection.
pub struct RawMcp {
    http: RawHttp,
    path: String,
    revision: Revision,
    session: Option<String>,
    next_id: u64,
}

impl RawMcp {
    /// Connects to `url` (`http://host:port/path`) on revision 2025-11-25, initialises a session
    /// and sends `notifications/initialized`.
    pub async fn connect(url: &str, key: Option<&str>) -> Result<Self> {
        Self::connect_in(url, key, Revision::Handshake).await
    }

    /// Connects to `url` on `revision` (with a session when it has them).
    pub async fn connect_in(url: &str, key: Option<&str>, revision: Revision) -> Result<Self> {
        let (http, path) = RawHttp::connect(url, key).await?;
        let mut client = RawMcp { http, path, revision, session: None, next_id: 0 };
        if revision == Revision::Handshake {
            let hello = json!({
                "protocolVersion": revision.version(),
                "capabilities": {},
                "clientInfo": {"name": "raw-keep-alive", "version": "1"}
            });
            client.request("initialize", hello).await?;
            client.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), "", None).await?;
        }
        Ok(client)
    }

    /// `tools/call`; the JSON-RPC result (an error result is an `Err`).
    pub async fn call(&mut self, tool: &str, arguments: &Value) -> Result<Value> {
        self.request("tools/call", json!({"name": tool, "arguments": arguments})).await
    }

    /// Sends one request and returns its result.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let answers = messages(&self.exchange(method, params).await?)?;
        let answer = answers
            .into_iter()
            .find(|message| message["id"] == self.next_id)
            .with_context(|| format!("no answer to {method}"))?;
        match answer.get("result") {
            Some(result) => Ok(result.clone()),
            None => bail!("{method} failed: {}", answer["error"]),
        }
    }

    /// Sends one request and returns its answer's body as it came, unread: what the server
    /// sends, without the client's parsing.
    pub async fn exchange(&mut self, method: &str, mut params: Value) -> Result<Bytes> {
        self.next_id += 1;
        let name = params["name"].as_str().map(str::to_string);
        if self.revision == Revision::Current {
            params["_meta"] = self.meta();
        }
        let message = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.post(&message, method, name.as_deref()).await
    }

    /// Opens the stream a client listens on for the server's notifications: in a session,
    /// `GET` on the endpoint; on 2026-07-28, `subscriptions/listen` for every list. Returns
    /// the stream's body as it comes.
    pub async fn listen(&mut self) -> Result<Incoming> {
        let version = self.revision.version();
        let mut headers =
            vec![("accept", "text/event-stream, application/json"), ("mcp-protocol-version", version)];
        let response = match (self.revision, &self.session) {
            (Revision::Handshake, Some(session)) => {
                headers.push(("mcp-session-id", session));
                self.http.send(hyper::Method::GET, &self.path, &headers, None).await?
            }
            (Revision::Handshake, None) => bail!("no session to listen on"),
            (Revision::Current, _) => {
                self.next_id += 1;
                headers.push(("mcp-method", "subscriptions/listen"));
                let params = json!({
                    "_meta": self.meta(),
                    "notifications": {"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}
                });
                let message = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "subscriptions/listen", "params": params});
                self.http.send(hyper::Method::POST, &self.path, &headers, Some(&message)).await?
            }
        };
        Ok(response.into_body())
    }

    /// The `_meta` every 2026-07-28 request carries.
    fn meta(&self) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": self.revision.version(),
            "io.modelcontextprotocol/clientInfo": {"name": "raw-keep-alive", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        })
    }

    /// Ends the session, if there is one, as a polite client does (`DELETE`).
    pub async fn close(mut self) -> Result<()> {
        if let Some(session) = self.session.take() {
            let headers =
                [("mcp-session-id", session.as_str()), ("mcp-protocol-version", self.revision.version())];
            self.http.send(hyper::Method::DELETE, &self.path, &headers, None).await?;
        }
        Ok(())
    }

    /// POSTs one JSON-RPC message with the revision's headers; returns the answer's body.
    async fn post(&mut self, message: &Value, method: &str, name: Option<&str>) -> Result<Bytes> {
        let mut headers = vec![
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", self.revision.version()),
        ];
        if let Some(session) = &self.session {
            headers.push(("mcp-session-id", session));
        }
        if self.revision == Revision::Current {
            headers.push(("mcp-method", method));
            headers.extend(name.map(|name| ("mcp-name", name)));
        }
        let (answer, body) = self.http.post(&self.path, &headers, message).await?;
        if let Some(session) = answer.get("mcp-session-id") {
            self.session = Some(session.to_str()?.to_string());
        }
        Ok(body)
    }
}

/// The messages of an MCP answer: a JSON body, or the `data:` lines of an SSE body.
fn messages(body: &[u8]) -> Result<Vec<Value>> {
    let body = std::str::from_utf8(body)?;
    if body.trim_start().starts_with('{') {
        return Ok(vec![serde_json::from_str(body)?]);
    }
    Ok(body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect())
}
