//! The session of a handshake-era streamable HTTP connection, as rmcp's client uses it: its
//! HTTP client wrapped so that the session id it sends is known, and direct calls
//! ([`super::direct`]) can go on the same session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// The session id rmcp's client last sent (none before the handshake ends, nor on a
/// connection without sessions); shared between the client and the direct calls.
#[derive(Clone, Default)]
pub(super) struct SessionWatch(Arc<Mutex<Option<Arc<str>>>>);

impl SessionWatch {
    pub(super) fn current(&self) -> Option<Arc<str>> {
        self.0.lock().expect("session id").clone()
    }

    /// A direct call found the session gone (HTTP 404): no call goes direct until rmcp's
    /// client, which starts a new session when it finds the same, sends the new one.
    pub(super) fn forget(&self, gone: &str) {
        let mut current = self.0.lock().expect("session id");
        if current.as_deref() == Some(gone) {
            *current = None;
        }
    }

    fn saw(&self, session: &Option<Arc<str>>) {
        if session.is_some() {
            *self.0.lock().expect("session id") = session.clone();
        }
    }
}

/// rmcp's HTTP client `C`, telling `watch` the session id of every request it sends.
#[derive(Clone)]
pub(super) struct Watched<C> {
    pub(super) client: C,
    pub(super) watch: SessionWatch,
}

type Posted<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;
type Streamed<E> = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<E>>;

/// rmcp's transport posts with `post_message_with_response_limits` and opens streams with
/// `get_stream_with_max_sse_event_size`; those and the methods without a default go through.
impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Watched<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Posted<C::Error> {
        self.watch.saw(&session_id);
        self.client.post_message(uri, message, session_id, auth_header, custom_headers).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Posted<C::Error> {
        self.watch.saw(&session_id);
        self.client
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<C::Error>> {
        self.watch.forget(&session_id);
        self.client.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Streamed<C::Error> {
        self.client.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Streamed<C::Error> {
        self.client
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
