//! The legacy HTTP+SSE transport (MCP 2024-11-05) as an rmcp [`Transport`]: the client opens
//! the server's event stream with a GET, waits for the `endpoint` event naming where to POST
//! its messages, POSTs each message there and reads every answer from the stream. rmcp has no
//! client for it; the MCP client on top is still rmcp's.
//!
//! The stream ending ends the transport; the connection's task then connects again (a new
//! stream, a new endpoint, a new `initialize`). Messages go only to the stream's own origin,
//! so a server cannot send Toolgate's headers (its credentials) elsewhere, and no event may
//! be larger than the answer limit.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::{Sse, SseStream};

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    #[error("the server answered {0}")]
    Status(StatusCode),
    #[error("the server's answer is not an event stream (Content-Type `{0}`)")]
    NotAStream(String),
    #[error("the event stream ended before its `endpoint` event")]
    NoEndpoint,
    #[error("the `endpoint` event names `{0}`, not a path on the server's own origin")]
    ForeignEndpoint(String),
}

type Events = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// One connection over HTTP+SSE.
pub struct SseTransport {
    http: reqwest::Client,
    /// Where messages are POSTed, from the `endpoint` event.
    endpoint: Url,
    headers: HeaderMap,
    events: Events,
    /// The longest a POST may take.
    post_timeout: Duration,
}

impl SseTransport {
    /// Opens the event stream at `url` with `headers` and waits for its endpoint. Events over
    /// `max_event` bytes end the stream.
    pub async fn connect(
        url: &str,
        headers: HeaderMap,
        max_event: usize,
        post_timeout: Duration,
    ) -> Result<Self, SseError> {
        let url = Url::parse(url).map_err(|_| SseError::ForeignEndpoint(url.to_string()))?;
        // A redirect could carry the server's credentials (and a re-POSTed message) elsewhere.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .tcp_nodelay(true)
            .build()?;
        let response = http
            .get(url.clone())
            .headers(headers.clone())
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
            .send()
            .await?;
        if !response.status().is_success() {
            return Err(SseError::Status(response.status()));
        }
        let content_type = response.headers().get(reqwest::header::CONTENT_TYPE);
        let content_type = content_type.and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        if !content_type.starts_with("text/event-stream") {
            return Err(SseError::NotAStream(content_type));
        }
        let bytes = bounded(response.bytes_stream(), max_event);
        let mut events: Events = Box::pin(SseStream::from_bytes_stream(bytes));
        let endpoint = loop {
            let event = events.next().await.ok_or(SseError::NoEndpoint)?.map_err(|_| SseError::NoEndpoint)?;
            if event.event.as_deref() == Some("endpoint") {
                let data = event.data.unwrap_or_default();
                let endpoint = url.join(data.trim()).map_err(|_| SseError::ForeignEndpoint(data.clone()))?;
                if endpoint.origin() != url.origin() {
                    return Err(SseError::ForeignEndpoint(data));
                }
                break endpoint;
            }
        };
        Ok(SseTransport { http, endpoint, headers, events, post_timeout })
    }
}

/// Fails the byte stream once more than `max_event` bytes arrive without an event ending (a
/// blank line), so one endless event cannot grow the parser's buffer without bound.
pub(super) fn bounded(
    bytes: impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
    max_event: usize,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let mut since_event_end = 0usize;
    let mut last = 0u8;
    bytes.map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        for &byte in chunk.iter() {
            since_event_end += 1;
            if byte == b'\n' && last == b'\n' {
                since_event_end = 0;
            }
            if byte != b'\r' {
                last = byte;
            }
        }
        if since_event_end > max_event {
            return Err(std::io::Error::other(format!("an event over {max_event} bytes")));
        }
        Ok(chunk)
    })
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let post = self
            .http
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .timeout(self.post_timeout)
            .json(&item);
        async move {
            let response = post.send().await?;
            // The answer comes on the stream; the POST's own body says nothing.
            if !response.status().is_success() {
                return Err(SseError::Status(response.status()));
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let event = match self.events.next().await? {
                Ok(event) => event,
                Err(err) => {
                    tracing::warn!(error = %err, "the SSE event stream failed");
                    return None;
                }
            };
            if !matches!(event.event.as_deref(), None | Some("message")) {
                continue;
            }
            let Some(data) = event.data else { continue };
            match serde_json::from_str(&data) {
                Ok(message) => return Some(message),
                Err(err) => {
                    tracing::warn!(error = %err, "an SSE event that is not a JSON-RPC message; skipped")
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.events = Box::pin(futures::stream::empty());
        Ok(())
    }
}
