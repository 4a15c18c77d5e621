//! Why an upstream MCP server could not be reached, listed or refreshed (the `upstream` module
//! connects to them).

use std::time::Duration;

/// Why an upstream server could not be reached, listed or refreshed; shown to administrators
/// (health, test connection, refresh) as it reads.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    /// A stdio server's program could not be started.
    #[error("cannot start the server: {0}")]
    Spawn(String),
    /// A stdio server's program started but the connection failed; what it wrote on its
    /// standard error last, if anything, says why.
    #[error("`{command}`: {failure}{}", stderr.as_ref().map(|s| format!("; it wrote on its standard error: {s}")).unwrap_or_default())]
    Stdio { command: String, failure: Box<UpstreamError>, stderr: Option<String> },
    /// A stdio server's program is not one this Toolgate starts (`TOOLGATE_STDIO_COMMANDS`);
    /// it is not retried.
    #[error("not started: {0}")]
    NotAllowed(String),
    /// A legacy HTTP+SSE server's event stream could not be opened.
    #[error("cannot open the event stream: {0}")]
    EventStream(String),
    /// A configured header name is not one HTTP allows.
    #[error("header `{name}`: {reason}")]
    HeaderName { name: String, reason: String },
    /// A configured header value is not one HTTP allows.
    #[error("header `{0}` has an invalid value")]
    HeaderValue(String),
    /// The MCP lifecycle (`server/discover`, or the `initialize` handshake) failed.
    #[error("initialisation failed: {0}")]
    Initialise(String),
    /// The server refused the connection's credentials (401, or 403 for want of scope), with
    /// this challenge; an OAuth token had been refreshed first.
    #[error("the server refused its credentials: {0}")]
    Refused(String),
    /// Connecting took longer than the connect timeout.
    #[error("no answer within {0:?}")]
    ConnectTimeout(Duration),
    /// `tools/list` failed.
    #[error("listing tools failed: {0}")]
    Listing(String),
    /// `tools/list` took longer than the connect timeout.
    #[error("listing tools got no answer within {0:?}")]
    ListingTimeout(Duration),
    /// The discovered tools could not be recorded.
    #[error("{0}")]
    Recording(String),
    /// The server has no connection of its own (disabled or removed).
    #[error("server `{0}` is not connected (disabled or removed)")]
    NotConnected(String),
    /// Its connection is down; the message says since when and why.
    #[error("{0}")]
    Down(String),
    /// An OAuth server has no working token for this connection.
    #[error("server `{0}` needs an authorization: authorize it on its page in the panel")]
    NeedsAuthorization(String),
    /// An OAuth server's provider could not be reached or refused.
    #[error("authorization: {0}")]
    Authorization(String),
}
