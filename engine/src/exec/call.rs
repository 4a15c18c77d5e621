//! What one call is asked with, what its caller receives while it runs, and what it answers.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::schema::Provider;
use crate::tool::{ClientRelay, ProgressSink, ToolOutput};

/// One call, as an LLM makes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRequest {
    /// The exposed name.
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    /// The tool (or argument validation) refused; the message is for the LLM.
    ToolError,
    /// Something else failed; only a correlation id is shown.
    Failed,
    Timeout,
    /// An external tool: the caller executes it and resumes with the result.
    Suspended,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::ToolError => "tool_error",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::Suspended => "suspended",
        }
    }
}

/// What the caller of one call receives while it runs.
#[derive(Default)]
pub struct CallHooks {
    /// Progress reports.
    pub progress: Option<ProgressSink>,
    /// Requests and log messages an upstream server sends the caller.
    pub client: Option<Arc<dyn ClientRelay>>,
    /// The format in which the search tool answers tool definitions; `None`: MCP's, as the
    /// tenant's MCP clients list tools.
    pub format: Option<Provider>,
}

/// A call of an external tool waiting for the caller's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PendingCall {
    pub id: Uuid,
    pub tool: String,
    pub arguments: Value,
}

/// The result of one call.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CallResult {
    pub status: Status,
    pub output: ToolOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingCall>,
    /// The client capabilities the call needed and its caller did not declare (its status a
    /// tool error): an MCP client is answered -32021.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_capabilities: Option<Value>,
    pub latency_ms: f64,
}
