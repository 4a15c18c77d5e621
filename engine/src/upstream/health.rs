//! How upstream connections are doing, and what testing a server before it is saved reports.

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

/// How an upstream connection is doing (a call's own outcome is [`crate::exec::Status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionStatus {
    Connecting,
    Ready,
    /// Connected, but the last discovery failed.
    Degraded,
    Down,
    /// An OAuth server with no working token: someone must authorize it (again).
    NeedsAuthorization,
}

impl ConnectionStatus {
    pub const ALL: [ConnectionStatus; 5] = [
        ConnectionStatus::Connecting,
        ConnectionStatus::Ready,
        ConnectionStatus::Degraded,
        ConnectionStatus::Down,
        ConnectionStatus::NeedsAuthorization,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionStatus::Connecting => "connecting",
            ConnectionStatus::Ready => "ready",
            ConnectionStatus::Degraded => "degraded",
            ConnectionStatus::Down => "down",
            ConnectionStatus::NeedsAuthorization => "needs_authorization",
        }
    }
}

/// The health of one connection, as the panel and metrics show it.
#[derive(Debug, Clone, Serialize)]
pub struct Health {
    pub server: String,
    /// Set for a tenant's private connection.
    pub tenant_id: Option<Uuid>,
    pub status: ConnectionStatus,
    pub last_error: Option<String>,
    /// Seconds since `last_error` happened.
    pub last_error_secs: Option<f64>,
    /// Seconds since the last successful contact.
    pub last_seen_secs: Option<f64>,
    /// The MCP revision the connection speaks (`2026-07-28`, or a handshake-era one).
    pub protocol: Option<String>,
    /// A stdio server's standard error, its newest lines (oldest first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stderr: Vec<String>,
}

/// What `test_connection` reports before a server is saved.
#[derive(Debug, Clone, Serialize)]
pub struct ServerProbe {
    pub server_info: Value,
    /// The tools it lists, as it lists them.
    pub tools: Vec<ProbedTool>,
    /// An OAuth server's authorization server: such a server is authorized once saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_server: Option<String>,
}

/// A tool as a tested server lists it.
#[derive(Debug, Clone, Serialize)]
pub struct ProbedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

impl ServerProbe {
    /// The name the server gives itself, if any.
    pub fn server_name(&self) -> Option<&str> {
        self.server_info.pointer("/serverInfo/name").and_then(Value::as_str)
    }
}
