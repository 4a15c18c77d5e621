//! Who the clients are: a Client ID Metadata Document's URL (fetched, checked and cached), a
//! dynamic registration (RFC 7591, bounded per address and in all), or a client an owner
//! registered. Redirect URIs are compared exactly, except that a loopback redirect may use any
//! port (RFC 8252 §7.3).

use std::time::Duration;

use time::OffsetDateTime;

use super::fetch::MetadataFetcher;
use super::{OAuthConfig, OAuthError};
use crate::secret::{digest as hash, random_token as random_secret};
use crate::store::Actor;
use crate::store::oauth::{self as store, AuthMethod, Client, ClientKind};

/// How long a metadata document is used before it is fetched again, unless its Cache-Control
/// says otherwise (within the bounds).
const METADATA_FRESH: Duration = Duration::from_secs(3600);
const METADATA_FRESH_MIN: Duration = Duration::from_secs(300);
const METADATA_FRESH_MAX: Duration = Duration::from_secs(24 * 3600);

/// Resolves clients, fetching metadata documents as needed.
pub(super) struct Clients {
    fetcher: MetadataFetcher,
}

impl Clients {
    pub(super) fn new(allow_private: bool) -> Self {
        Clients { fetcher: MetadataFetcher::new(allow_private) }
    }

    /// The client `id`: registered here, or a metadata document fetched when its copy is not
    /// fresh. Refused when unknown or when its document cannot be used (never cached then).
    pub(super) async fn resolve(&self, pool: &sqlx::PgPool, id: &str) -> Result<Client, OAuthError> {
        let stored = store::client(pool, id).await?;
        let url_shaped = id.starts_with("https://") || id.starts_with("http://");
        match stored {
            Some(client) if client.kind != ClientKind::MetadataDocument => Ok(client),
            Some(client) if client.fresh_until.is_some_and(|at| at > OffsetDateTime::now_utc()) => Ok(client),
            _ if url_shaped => {
                let fetched = self.fetcher.fetch(id).await?;
                let client = document_client(id, &fetched.body, fetched.max_age)?;
                store::save_fetched(pool, &client).await?;
                Ok(client)
            }
            _ => Err(OAuthError::refused("invalid_client", format!("unknown client `{}`", shown(id)))),
        }
    }
}

/// At most 100 characters of an untrusted id, for messages.
pub(super) fn shown(id: &str) -> String {
    id.chars().take(100).collect()
}

/// The metadata document `body` of client `id`, checked as the CIMD draft asks.
fn document_client(id: &str, body: &[u8], max_age: Option<Duration>) -> Result<Client, OAuthError> {
    let invalid =
        |why: String| OAuthError::refused("invalid_client", format!("the client's metadata document {why}"));
    let document: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(body).map_err(|err| invalid(format!("is not a JSON object ({err})")))?;
    if document.get("client_id").and_then(|v| v.as_str()) != Some(id) {
        return Err(invalid("names another client_id than its own URL".into()));
    }
    if document.contains_key("client_secret") || document.contains_key("client_secret_expires_at") {
        return Err(invalid("holds a client secret, which a public document must not".into()));
    }
    match document.get("token_endpoint_auth_method").and_then(|v| v.as_str()) {
        None | Some("none") => {}
        Some(other) => {
            return Err(invalid(format!(
                "asks for token_endpoint_auth_method `{other}`; this server takes `none` (PKCE) from such clients"
            )));
        }
    }
    let redirect_uris: Vec<String> = document
        .get("redirect_uris")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .ok_or_else(|| invalid("has no redirect_uris".into()))?;
    check_redirect_uris(&redirect_uris).map_err(|err| match err {
        OAuthError::Refused { description, .. } => invalid(description),
        other => other,
    })?;
    let text = |key: &str, max: usize| {
        document
            .get(key)
            .and_then(|v| v.as_str())
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.chars().take(max).collect::<String>())
    };
    let host =
        reqwest::Url::parse(id).ok().and_then(|url| url.host_str().map(str::to_string)).unwrap_or_default();
    let fresh = max_age.unwrap_or(METADATA_FRESH).clamp(METADATA_FRESH_MIN, METADATA_FRESH_MAX);
    Ok(Client {
        id: id.to_string(),
        kind: ClientKind::MetadataDocument,
        name: text("client_name", 200).unwrap_or(host),
        redirect_uris,
        client_uri: text("client_uri", 2000),
        auth_method: AuthMethod::None,
        secret_hash: None,
        fresh_until: Some(OffsetDateTime::now_utc() + fresh),
        created_at: OffsetDateTime::now_utc(),
    })
}

/// Whether `url` sends the browser back to this machine only.
pub(super) fn is_loopback_url(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Whether the request's `uri` is one of `registered`: the same string, or, for a loopback
/// `http` URI, the same but for its port (native apps take a free port each time).
pub(super) fn redirect_allowed(registered: &[String], uri: &str) -> bool {
    if registered.iter().any(|r| r == uri) {
        return true;
    }
    let Ok(asked) = reqwest::Url::parse(uri) else { return false };
    if asked.scheme() != "http" || !is_loopback_url(&asked) {
        return false;
    }
    let without_port = |url: &reqwest::Url| {
        let mut url = url.clone();
        let _ = url.set_port(None);
        url
    };
    registered
        .iter()
        .filter_map(|r| reqwest::Url::parse(r).ok())
        .any(|r| is_loopback_url(&r) && r.host() == asked.host() && without_port(&r) == without_port(&asked))
}

/// The rules a registered redirect URI keeps: absolute, no fragment; `https`, `http` on a
/// loopback host, or an app's own scheme (`com.example.app:/cb`, RFC 8252 §7.1).
fn check_redirect_uris(uris: &[String]) -> Result<(), OAuthError> {
    let invalid = |why: String| OAuthError::refused("invalid_redirect_uri", why);
    if uris.is_empty() || uris.len() > 20 {
        return Err(invalid("give 1 to 20 redirect_uris".into()));
    }
    for uri in uris {
        let url = reqwest::Url::parse(uri)
            .map_err(|_| invalid(format!("`{}` is not an absolute URI", shown(uri))))?;
        if url.fragment().is_some() || uri.len() > 2000 {
            return Err(invalid(format!("`{}` has a fragment or is too long", shown(uri))));
        }
        let allowed = match url.scheme() {
            "https" => true,
            "http" => is_loopback_url(&url),
            "javascript" | "data" | "file" | "vbscript" | "ftp" | "ws" | "wss" => false,
            scheme => scheme.contains('.'),
        };
        if !allowed {
            return Err(invalid(format!(
                "`{}` must be https, http on a loopback host, or an app's own scheme (com.example.app:/...)",
                shown(uri)
            )));
        }
    }
    Ok(())
}

/// A dynamic registration request (RFC 7591 §2); what is not listed is kept and echoed.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Registration {
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: Option<String>,
    pub grant_types: Option<Vec<String>>,
    pub response_types: Option<Vec<String>>,
    pub client_name: Option<String>,
    pub client_uri: Option<String>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// The answer to a registration (RFC 7591 §3.2.1): every registered value, as registered.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Registered {
    pub client_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub client_id_issued_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<i64>,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: AuthMethod,
    pub grant_types: Vec<String>,
    pub response_types: Vec<String>,
    pub client_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_uri: Option<String>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

fn auth_method(name: Option<&str>) -> Result<AuthMethod, OAuthError> {
    match name {
        // RFC 7591's default.
        None | Some("client_secret_basic") => Ok(AuthMethod::ClientSecretBasic),
        Some("client_secret_post") => Ok(AuthMethod::ClientSecretPost),
        Some("none") => Ok(AuthMethod::None),
        Some(other) => Err(OAuthError::refused(
            "invalid_client_metadata",
            format!(
                "token_endpoint_auth_method `{}` is not supported: none, client_secret_basic or client_secret_post",
                shown(other)
            ),
        )),
    }
}

pub(super) async fn register(
    pool: &sqlx::PgPool,
    config: &OAuthConfig,
    registration: Registration,
    address: &str,
) -> Result<Registered, OAuthError> {
    check_redirect_uris(&registration.redirect_uris)?;
    let method = auth_method(registration.token_endpoint_auth_method.as_deref())?;
    let grant_types = registration.grant_types.unwrap_or_else(|| vec!["authorization_code".into()]);
    if let Some(other) =
        grant_types.iter().find(|g| !["authorization_code", "refresh_token"].contains(&g.as_str()))
    {
        return Err(OAuthError::refused(
            "invalid_client_metadata",
            format!("grant type `{}` is not supported: authorization_code and refresh_token", shown(other)),
        ));
    }
    let response_types = registration.response_types.unwrap_or_else(|| vec!["code".into()]);
    if response_types.iter().any(|r| r != "code") {
        return Err(OAuthError::refused(
            "invalid_client_metadata",
            "only the response type `code` is supported",
        ));
    }
    // What the server sets is its own, whatever the request said of it.
    let mut other = registration.other;
    for own in ["client_id", "client_secret", "client_id_issued_at", "client_secret_expires_at"] {
        other.remove(own);
    }
    let (from_here, unused) = store::recent_registrations(pool, address, Duration::from_secs(3600)).await?;
    if from_here >= i64::from(config.registrations_per_hour)
        || unused >= i64::from(config.unused_registrations)
    {
        tracing::warn!(address, from_here, unused, "dynamic client registration refused: limit reached");
        return Err(OAuthError::refused(
            "too_many_registrations",
            "too many clients were registered recently; try again in an hour, or ask an owner to register this app",
        ));
    }
    let secret = (method != AuthMethod::None).then(|| random_secret("tgs_"));
    let name = registration
        .client_name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| n.chars().take(200).collect())
        .unwrap_or_else(|| "Unnamed app".to_string());
    let client = Client {
        id: random_secret("tgd_")[..28].to_string(),
        kind: ClientKind::Dynamic,
        name,
        redirect_uris: registration.redirect_uris,
        client_uri: registration.client_uri.filter(|u| u.len() <= 2000),
        auth_method: method,
        secret_hash: secret.as_deref().map(hash),
        fresh_until: None,
        created_at: OffsetDateTime::now_utc(),
    };
    store::insert(pool, &client, Some(address)).await?;
    tracing::info!(client = client.id, name = client.name, address, "client registered");
    Ok(Registered {
        client_id: client.id,
        client_secret_expires_at: secret.as_ref().map(|_| 0),
        client_secret: secret,
        client_id_issued_at: client.created_at.unix_timestamp(),
        redirect_uris: client.redirect_uris,
        token_endpoint_auth_method: method,
        grant_types,
        response_types,
        client_name: client.name,
        client_uri: client.client_uri,
        other,
    })
}

pub(super) async fn preregister(
    pool: &sqlx::PgPool,
    actor: &Actor,
    name: &str,
    redirect_uris: Vec<String>,
    confidential: bool,
) -> crate::Result<(String, Option<String>)> {
    let name = name.trim();
    if !(1..=200).contains(&name.chars().count()) {
        return Err(crate::Error::Invalid("a client's name is 1 to 200 characters".into()));
    }
    check_redirect_uris(&redirect_uris).map_err(|err| crate::Error::Invalid(err.to_string()))?;
    let secret = confidential.then(|| random_secret("tgs_"));
    let client = Client {
        id: random_secret("tgp_")[..28].to_string(),
        kind: ClientKind::Preregistered,
        name: name.to_string(),
        redirect_uris,
        client_uri: None,
        auth_method: if confidential { AuthMethod::ClientSecretBasic } else { AuthMethod::None },
        secret_hash: secret.as_deref().map(hash),
        fresh_until: None,
        created_at: OffsetDateTime::now_utc(),
    };
    store::create_preregistered(pool, actor, &client).await?;
    Ok((client.id, secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_redirects_may_change_port_only() {
        let registered =
            vec!["http://127.0.0.1:3334/oauth/callback".to_string(), "https://app.example/cb".to_string()];
        assert!(redirect_allowed(&registered, "http://127.0.0.1:3334/oauth/callback"));
        assert!(redirect_allowed(&registered, "http://127.0.0.1:51000/oauth/callback"));
        assert!(redirect_allowed(&registered, "https://app.example/cb"));
        for refused in [
            "http://127.0.0.1:51000/other",
            "http://localhost:3334/oauth/callback",
            "https://app.example:8443/cb",
            "https://app.example/cb/",
            "https://evil.example/cb",
        ] {
            assert!(!redirect_allowed(&registered, refused), "{refused}");
        }
    }

    #[test]
    fn redirect_uris_must_be_safe_targets() {
        for ok in
            ["https://app.example/cb", "http://localhost:1/cb", "http://[::1]/cb", "com.example.app:/cb"]
        {
            assert!(check_redirect_uris(&[ok.into()]).is_ok(), "{ok}");
        }
        for bad in ["http://app.example/cb", "javascript:alert(1)", "https://a/cb#x", "/relative"] {
            assert!(check_redirect_uris(&[bad.into()]).is_err(), "{bad}");
        }
        assert!(check_redirect_uris(&[]).is_err());
    }

    #[test]
    fn a_metadata_document_names_itself_and_holds_no_secret() {
        let id = "https://app.example/client.json";
        let good = br#"{"client_id": "https://app.example/client.json", "client_name": "App",
                        "redirect_uris": ["http://127.0.0.1:5000/cb"]}"#;
        let client = document_client(id, good, None).unwrap();
        assert_eq!((client.name.as_str(), client.auth_method), ("App", AuthMethod::None));
        let other = br#"{"client_id": "https://evil.example/c.json", "redirect_uris": ["https://a/cb"]}"#;
        assert!(document_client(id, other, None).is_err());
        let secret = br#"{"client_id": "https://app.example/client.json", "redirect_uris": ["https://a/cb"],
                          "token_endpoint_auth_method": "client_secret_basic"}"#;
        assert!(document_client(id, secret, None).is_err());
        assert!(document_client(id, b"[]", None).is_err());
    }
}
