//! Discovery of a protected server's provider: the server's challenge to a client without a
//! token, then the protected resource metadata and the authorization server's metadata it
//! points to.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use rmcp::model::ProtocolVersion;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationMetadataSource,
};
use serde_json::json;

use crate::model::UpstreamError;

/// What the server at `url` answers a client without a token: its `WWW-Authenticate`
/// challenge to the request Toolgate opens a connection with (`server/discover`, then
/// `initialize` for a server of the handshake era). It may point to metadata found nowhere else
/// and names the scope to ask for; a server that lets both through gives none.
async fn challenge(url: &str) -> Result<Option<String>, AuthError> {
    let latest = ProtocolVersion::LATEST.to_string();
    let discover = json!({
        "jsonrpc": "2.0", "id": 0, "method": "server/discover",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": latest}},
    });
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": ProtocolVersion::LATEST_WITH_INITIALIZE,
            "capabilities": {},
            "clientInfo": crate::implementation(),
        },
    });
    let http = reqwest::Client::new();
    for (request, version) in [(discover, Some(latest.as_str())), (initialize, None)] {
        let mut post = http
            .post(url)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .timeout(Duration::from_secs(10));
        if let Some(version) = version {
            post = post.header("mcp-protocol-version", version);
        }
        let response = post.body(request.to_string()).send().await?;
        if response.status() == StatusCode::UNAUTHORIZED {
            let challenges: Vec<&str> =
                response.headers().get_all(WWW_AUTHENTICATE).iter().filter_map(|v| v.to_str().ok()).collect();
            let pointing = challenges.iter().find(|challenge| challenge.contains("resource_metadata"));
            return Ok(pointing.or(challenges.first()).map(|challenge| challenge.to_string()));
        }
    }
    Ok(None)
}

/// An rmcp manager for the provider of the server at `url`, found by discovery from the
/// server's challenge, and the provider's metadata.
pub(super) async fn discover(url: &str) -> Result<(AuthorizationManager, AuthorizationMetadata), AuthError> {
    // Upstream servers, and their providers, are often on private networks; link-local and
    // other reserved addresses stay refused.
    let mut manager = AuthorizationManager::new_allowing_private_addresses(url).await?;
    let challenge = challenge(url).await?;
    let resolution = manager.resolve_metadata_from_challenge(challenge.as_deref()).await?;
    if resolution.source == AuthorizationMetadataSource::LegacyEndpointFallback {
        return Err(AuthError::AuthorizationFailed(format!(
            "`{url}` publishes no OAuth metadata (RFC 9728 protected resource metadata, or RFC 8414)"
        )));
    }
    manager.set_metadata(resolution.metadata.clone());
    Ok((manager, resolution.metadata))
}

/// The authorization server of the protected server at `url` (its issuer, else its
/// authorization endpoint), found as an authorization finds it: what testing an OAuth server
/// before it is saved can check.
pub(in crate::upstream) async fn provider_of(url: &str) -> Result<String, UpstreamError> {
    let (_, metadata) = discover(url).await.map_err(|e| UpstreamError::Authorization(e.to_string()))?;
    Ok(metadata.issuer.unwrap_or(metadata.authorization_endpoint))
}
