//! Toolgate as the OAuth client of protected upstream servers, through rmcp's `auth`: discovery
//! (from the server's challenge: protected resource metadata, then the authorization
//! server's), the client (one the admin registered, Toolgate's Client ID Metadata Document, or
//! dynamic registration, kept per server), the authorization code flow with PKCE and
//! `resource`, and the tokens of each stored authorization, refreshed before they expire and
//! once when the server refuses one; a server refusing one still, or wanting a scope it lacks,
//! needs the authorization given again ([`refused`]).
//!
//! An authorization is started in a browser ([`begin`]), where the provider sends the person
//! back to Toolgate's callback ([`finish`]), which must be the same browser session. The PKCE
//! verifier waits in the database between the two, sealed, so any replica takes the callback.
//! A refresh is one at a time across replicas (an advisory lock): providers rotate refresh
//! tokens, and a second use of the old one would revoke the grant. A refresh the provider
//! refuses marks the authorization "needs authorization", and nothing retries it.
//!
//! [`discovery`] finds a server's provider, [`authorize`] runs an authorization in a browser (or
//! a client credentials exchange), [`token`] carries a stored authorization's token on a
//! connection, kept in the database by [`credentials`], and [`refusal`] handles a server
//! refusing it.

use serde_json::{Value, json};

mod authorize;
mod credentials;
mod discovery;
mod refusal;
mod token;

pub use authorize::{AuthorizeError, Begun, begin, finish};
pub(super) use discovery::provider_of;
pub(super) use refusal::refused;
pub(super) use token::Token;

/// Where a provider sends the person back, under Toolgate's public URL.
pub const CALLBACK_PATH: &str = "/oauth/upstream/callback";
/// Where a person (signed in to the panel) starts authorizing a server, under Toolgate's
/// public URL.
pub const START_PATH: &str = "/oauth/upstream/start";
/// Toolgate's Client ID Metadata Document as an upstream's client, under its public URL.
pub const CLIENT_METADATA_PATH: &str = "/oauth/upstream/client.json";

/// The callback URL of Toolgate at `base` (its public URL): the one to give a provider.
pub fn callback_url(base: &str) -> String {
    format!("{base}{CALLBACK_PATH}")
}

/// Toolgate's Client ID Metadata Document at `base`: its URL is its client id wherever a
/// provider accepts such documents (it must be https).
pub fn client_metadata(base: &str) -> Value {
    json!({
        "client_id": format!("{base}{CLIENT_METADATA_PATH}"),
        "client_name": "Toolgate",
        "client_uri": base,
        "redirect_uris": [callback_url(base)],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "web",
    })
}
