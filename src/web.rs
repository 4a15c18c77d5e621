//! Middleware around the panel: the sign-in guard, who a session belongs to (for the admin
//! API), the cross-site write check and the security headers; and, around everything, which
//! address a request comes from.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use app::auth::ssr::{ACCOUNT_PAGE, ClientAddress, landing, signed_in};
use app::state::AppState;
use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use tower::ServiceBuilder;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_sessions::Session;

use crate::admin_api::SessionAdmin;
use crate::settings::TrustedProxies;

/// The panel's server functions live under this prefix; they answer 401 themselves.
const SERVER_FN_PREFIX: &str = "/api/";
const LOGIN_PAGE: &str = "/login";

/// Pages anyone may open: signing in, and taking an invitation.
const PUBLIC_PAGES: &[&str] = &[LOGIN_PAGE, "/invite/"];

/// Panel pages need a signed-in account: anyone else is sent to the login page, which brings
/// them back to the page they asked for; a signed-in account visiting the login page goes to
/// its start page, a member only ever sees the member pages (its connected apps, consent), and a
/// tenant administrator asking for an owner's page is told it is not theirs.
pub async fn require_sign_in(
    State(state): State<AppState>,
    session: Session,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if path.starts_with(SERVER_FN_PREFIX) {
        return next.run(request).await;
    }
    let public =
        PUBLIC_PAGES.iter().any(|page| path == *page || (page.ends_with('/') && path.starts_with(page)));
    match signed_in(&session, &state.pool).await {
        Ok(Some(account)) if path == LOGIN_PAGE => Redirect::to(&landing(&account, None)).into_response(),
        // Signed in with a one-time password: choosing one's own comes before anything else.
        Ok(Some(account)) if account.password_temporary && !public && !app::is_page(path, ACCOUNT_PAGE) => {
            let asked = request.uri().path_and_query().map(|p| p.as_str());
            Redirect::to(&landing(&account, asked)).into_response()
        }
        Ok(Some(account))
            if account.role == engine::admin::Role::Member && !public && !app::member_page(path) =>
        {
            Redirect::to(&landing(&account, None)).into_response()
        }
        Ok(Some(account)) if account.role == engine::admin::Role::TenantAdmin && app::owner_page(path) => {
            let query: String =
                form_urlencoded::Serializer::new(String::new()).append_pair("page", path).finish();
            Redirect::to(&format!("{}?{query}", app::NOT_ALLOWED_PAGE)).into_response()
        }
        Ok(None) if !public => {
            let asked = request.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
            if asked == "/" {
                return Redirect::to(LOGIN_PAGE).into_response();
            }
            let query: String =
                form_urlencoded::Serializer::new(String::new()).append_pair("next", asked).finish();
            Redirect::to(&format!("{LOGIN_PAGE}?{query}")).into_response()
        }
        Ok(_) => next.run(request).await,
        Err(_) if engine::service::ping(&state.pool).await.is_err() => database_away_page(),
        Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, err.to_string()).into_response(),
    }
}

/// The page a panel visitor gets while PostgreSQL is away (sessions and every page's data live
/// there): what is going on, that agents are still served, and a reload every few seconds.
fn database_away_page() -> Response {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{RETRY_AFTER_SECONDS}\">\
         <title>Toolgate: database unavailable</title></head><body>\
         <h1>Toolgate cannot reach its database</h1>\
         <p>The panel keeps its sessions and settings in PostgreSQL, which does not answer right now \
         (a restart or a failover, usually over within seconds). Agents are still served the tools \
         they had; changes wait until the database is back.</p>\
         <p>This page reloads itself every {RETRY_AFTER_SECONDS} seconds.</p></body></html>"
    );
    (StatusCode::SERVICE_UNAVAILABLE, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], page)
        .into_response()
}

/// Puts the administrator of the request's session, if any, into its extensions for the admin
/// API ([`SessionAdmin`]). A request with an `Authorization` header brings an admin token
/// instead, and its session is not looked at.
pub async fn identify_session(
    State(state): State<AppState>,
    session: Session,
    mut request: Request,
    next: Next,
) -> Response {
    if !request.headers().contains_key(header::AUTHORIZATION) {
        match signed_in(&session, &state.pool).await {
            Ok(admin) => {
                request.extensions_mut().insert(SessionAdmin(admin));
            }
            Err(err) => return crate::gateway::internal(&err),
        }
    }
    next.run(request).await
}

/// The address a request comes from, for sign-in throttling and every other per-address
/// limit: the TCP peer's, unless the peer is a trusted proxy. Then `X-Forwarded-For` (every
/// such header, in order, as one list) is walked from the right, each proxy having appended
/// the address it was reached from: the first address that is not itself a trusted proxy is
/// the client (whatever the client put further left is its own claim, never believed). An
/// entry that is not an address ends the walk at the last address known; so does the end of
/// the list, everyone on it being a trusted proxy. An untrusted peer's header is ignored.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &TrustedProxies) -> IpAddr {
    let mut client = peer.to_canonical();
    if !trusted.trusts(client) {
        return client;
    }
    for list in headers.get_all(X_FORWARDED_FOR).iter().rev() {
        // Split as bytes: what a client wrote further left (a proxy appends to it) may not be
        // text, and must not spoil the entries the proxies added.
        let entries = list
            .as_bytes()
            .rsplit(|byte| *byte == b',')
            .map(|entry| std::str::from_utf8(entry).map(str::trim));
        // Empty elements of a list are ignored (RFC 9110 §5.6.1).
        for entry in entries.filter(|entry| *entry != Ok("")) {
            let Some(hop) = entry.ok().and_then(forwarded_ip) else { return client };
            client = hop;
            if !trusted.trusts(hop) {
                return client;
            }
        }
    }
    client
}

const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// An `X-Forwarded-For` entry's address; some proxies add the port (`203.0.113.7:4711`,
/// `[2001:db8::7]:443`).
fn forwarded_ip(entry: &str) -> Option<IpAddr> {
    let ip = entry.parse::<IpAddr>().ok().or_else(|| entry.parse::<SocketAddr>().ok().map(|at| at.ip()))?;
    Some(ip.to_canonical())
}

/// Puts the request's [`ClientAddress`] (see [`client_ip`]) into its extensions, for the
/// sign-in server function and the OAuth registration endpoint.
pub async fn client_address(
    State(trusted): State<Arc<TrustedProxies>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(peer)| peer.ip());
    if let Some(peer) = peer {
        let client = client_ip(peer, request.headers(), &trusted);
        request.extensions_mut().insert(ClientAddress(client));
    }
    next.run(request).await
}

/// Origins allowed to make state-changing browser requests.
pub struct AllowedOrigins {
    /// `scheme://host[:port]` of `TOOLGATE_PUBLIC_URL`, when set.
    public: Option<String>,
}

impl AllowedOrigins {
    pub fn new(public_url: Option<String>) -> Self {
        let public = public_url
            .and_then(|url| url.parse::<Uri>().ok())
            .and_then(|uri| Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?)));
        AllowedOrigins { public }
    }

    fn admits(&self, origin: &str, headers: &HeaderMap) -> bool {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let origin_authority = origin.split_once("://").map(|(_, authority)| authority);
        self.public.as_deref() == Some(origin) || (host.is_some() && origin_authority == host)
    }
}

/// The panel's session cookie.
pub const SESSION_COOKIE: &str = "toolgate_session";

/// Whether the request carries the panel's session cookie.
fn carries_session_cookie(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|cookies| cookies.split(';'))
        .any(|cookie| cookie.trim_start().starts_with(&format!("{SESSION_COOKIE}=")))
}

/// How long the answer to a write waits for this process's catalog to hold the change.
const PROPAGATION_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Read-your-writes: a write of the admin API or of a panel server function is answered only
/// once this process's catalog snapshot holds it (at most [`PROPAGATION_WAIT`]), so a script
/// that creates a key and uses it at once, or applies a document and lists the tools, sees its
/// change. Past the wait the answer says so: `Toolgate-Propagation: pending`. Other replicas
/// follow within their own rebuild.
pub async fn read_your_writes(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let write = request.uri().path().starts_with(SERVER_FN_PREFIX)
        && !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let mut response = next.run(request).await;
    if write && response.status().is_success() {
        let caught_up = state.catalog.caught_up(PROPAGATION_WAIT).await;
        if !caught_up.as_ref().is_ok_and(|held| *held) {
            if let Err(err) = caught_up {
                tracing::warn!(error = %err, "could not tell whether the catalog holds a write");
            }
            response.headers_mut().insert(PROPAGATION, HeaderValue::from_static("pending"));
        }
    }
    response
}

/// Says a write is saved but this process does not serve it yet.
pub const PROPAGATION: header::HeaderName = header::HeaderName::from_static("toolgate-propagation");

/// CSRF defence, on top of the `SameSite=Strict` session cookie: a state-changing request
/// from a browser must come from Toolgate's own origin (`Origin`, else `Referer`). A request
/// with `Authorization` (an admin token) and no session cookie is authenticated by the token
/// alone, which another site cannot have, and passes; with the cookie, the origin decides,
/// whatever else the request carries.
pub async fn same_origin_writes(
    State(allowed): State<Arc<AllowedOrigins>>,
    request: Request,
    next: Next,
) -> Response {
    let safe = matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let headers = request.headers();
    if safe || (headers.contains_key(header::AUTHORIZATION) && !carries_session_cookie(headers)) {
        return next.run(request).await;
    }
    let origin =
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()).map(str::to_string).or_else(|| {
            let referer = headers.get(header::REFERER)?.to_str().ok()?.parse::<Uri>().ok()?;
            Some(format!("{}://{}", referer.scheme_str()?, referer.authority()?))
        });
    match origin {
        Some(origin) if allowed.admits(&origin, headers) => next.run(request).await,
        _ => (
            StatusCode::FORBIDDEN,
            "cross-site request refused: the Origin of this request is not this Toolgate server",
        )
            .into_response(),
    }
}

/// The policy of every answer that is not a panel page (the page sets its own, with its
/// nonce): nothing may load from it, nothing may frame it.
const DEFAULT_POLICY: &str = "default-src 'none'; frame-ancestors 'none'";

/// Headers on every answer: no MIME sniffing, no framing, the referrer kept within the site,
/// a Content-Security-Policy unless the panel page set its own, HSTS when Toolgate is served
/// over https, and `Retry-After` on a 503.
pub fn security_headers(router: Router, https: bool) -> Router {
    // Not a security header, but as fixed: every 503 (the database away) says when to try
    // again, unless it said so itself.
    let retry_after = SetResponseHeaderLayer::if_not_present(header::RETRY_AFTER, |response: &Response| {
        (response.status() == StatusCode::SERVICE_UNAVAILABLE)
            .then_some(HeaderValue::from_static(RETRY_AFTER_SECONDS))
    });
    let fixed = |name, value| SetResponseHeaderLayer::overriding(name, HeaderValue::from_static(value));
    let hsts = https.then(|| fixed(header::STRICT_TRANSPORT_SECURITY, "max-age=31536000"));
    router.layer(
        ServiceBuilder::new()
            .layer(fixed(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .layer(fixed(header::X_FRAME_OPTIONS, "DENY"))
            .layer(fixed(header::REFERRER_POLICY, "same-origin"))
            .layer(SetResponseHeaderLayer::if_not_present(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(DEFAULT_POLICY),
            ))
            .option_layer(hsts)
            .layer(retry_after),
    )
}

/// What a 503 tells clients to wait before trying again: the database is usually back (a
/// restart, a failover) within seconds.
const RETRY_AFTER_SECONDS: &str = "5";

#[cfg(test)]
mod tests {
    use super::*;

    fn host(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, value.parse().unwrap());
        headers
    }

    #[test]
    fn same_host_origin_is_admitted() {
        let allowed = AllowedOrigins::new(None);
        assert!(allowed.admits("http://127.0.0.1:3000", &host("127.0.0.1:3000")));
    }

    #[test]
    fn foreign_origin_is_refused() {
        let allowed = AllowedOrigins::new(None);
        assert!(!allowed.admits("http://evil.example", &host("127.0.0.1:3000")));
        assert!(!allowed.admits("http://127.0.0.1:3001", &host("127.0.0.1:3000")));
    }

    #[test]
    fn public_url_origin_is_admitted_behind_a_proxy() {
        let allowed = AllowedOrigins::new(Some("https://gate.example.com/".into()));
        assert!(allowed.admits("https://gate.example.com", &host("10.0.0.5:3000")));
        assert!(!allowed.admits("http://gate.example.com", &host("10.0.0.5:3000")));
    }

    /// The client `client_ip` picks for `peer` sending these `X-Forwarded-For` headers.
    fn client(trusted: &str, peer: &str, forwarded: &[&str]) -> String {
        let mut headers = HeaderMap::new();
        for value in forwarded {
            headers.append(X_FORWARDED_FOR, HeaderValue::from_str(value).unwrap());
        }
        let trusted = trusted.parse::<TrustedProxies>().unwrap();
        client_ip(peer.parse().unwrap(), &headers, &trusted).to_string()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        assert_eq!(client("", "198.51.100.1", &["203.0.113.7"]), "198.51.100.1");
        assert_eq!(client("10.0.0.0/8", "198.51.100.1", &["203.0.113.7"]), "198.51.100.1");
        assert_eq!(client("127.0.0.1", "127.0.0.2", &["203.0.113.7"]), "127.0.0.2");
        assert_eq!(client("2001:db8::/32", "2001:db9::1", &["203.0.113.7"]), "2001:db9::1");
    }

    #[test]
    fn a_trusted_proxy_names_the_client() {
        assert_eq!(client("127.0.0.1", "127.0.0.1", &["203.0.113.7"]), "203.0.113.7");
        assert_eq!(client("10.0.0.0/8", "10.9.8.7", &["203.0.113.7"]), "203.0.113.7");
        assert_eq!(client("2001:db8::/32", "2001:db8::5", &["2001:db8:1::1, 2a00:1450::7"]), "2a00:1450::7");
        // Without the header (or with an empty one) the proxy itself is all we know.
        assert_eq!(client("127.0.0.1", "127.0.0.1", &[]), "127.0.0.1");
        assert_eq!(client("127.0.0.1", "127.0.0.1", &[""]), "127.0.0.1");
    }

    #[test]
    fn the_rightmost_untrusted_address_is_the_client() {
        let trusted = "127.0.0.1,10.0.0.0/8";
        // The client put 198.51.100.1 in front itself: only what our proxies added counts.
        let spoofed = "198.51.100.1, 203.0.113.7, 10.1.2.3";
        assert_eq!(client(trusted, "127.0.0.1", &[spoofed]), "203.0.113.7");
        // Several headers make one list, in order.
        assert_eq!(client(trusted, "127.0.0.1", &["198.51.100.1", "203.0.113.7,10.1.2.3"]), "203.0.113.7");
        assert_eq!(client(trusted, "127.0.0.1", &["203.0.113.7", "10.1.2.3"]), "203.0.113.7");
        // Empty elements are skipped; ports are dropped.
        assert_eq!(client(trusted, "127.0.0.1", &["203.0.113.7,, 10.1.2.3 ,"]), "203.0.113.7");
        assert_eq!(client(trusted, "127.0.0.1", &["203.0.113.7:4711"]), "203.0.113.7");
        assert_eq!(client(trusted, "127.0.0.1", &["[2001:db8::7]:443"]), "2001:db8::7");
        // Everyone on the list a trusted proxy: the farthest of them.
        assert_eq!(client(trusted, "127.0.0.1", &["10.0.0.5, 10.1.2.3"]), "10.0.0.5");
    }

    #[test]
    fn garbage_in_the_header_ends_the_walk_at_the_last_address_known() {
        let trusted = "127.0.0.1,10.0.0.0/8";
        assert_eq!(client(trusted, "127.0.0.1", &["not-an-address"]), "127.0.0.1");
        assert_eq!(client(trusted, "127.0.0.1", &["unknown"]), "127.0.0.1");
        assert_eq!(client(trusted, "127.0.0.1", &["203.0.113.7, garbage"]), "127.0.0.1");
        assert_eq!(client(trusted, "127.0.0.1", &["203.0.113.7, 10.1.2.3/8"]), "127.0.0.1");
        assert_eq!(client(trusted, "127.0.0.1", &["garbage, 10.1.2.3"]), "10.1.2.3");
        // Not even text: only where it is not text does the walk end.
        let trusted: TrustedProxies = trusted.parse().unwrap();
        let walked = |value: &[u8]| {
            let mut headers = HeaderMap::new();
            headers.insert(X_FORWARDED_FOR, HeaderValue::from_bytes(value).unwrap());
            client_ip("127.0.0.1".parse().unwrap(), &headers, &trusted).to_string()
        };
        assert_eq!(walked(b"203.0.113.7\xff"), "127.0.0.1");
        assert_eq!(walked(b"198.51.100.1\xff, 203.0.113.7, 10.1.2.3"), "203.0.113.7");
    }

    #[test]
    fn ipv4_mapped_addresses_count_as_ipv4() {
        // A dual-stack listener sees an IPv4 proxy as ::ffff:a.b.c.d.
        assert_eq!(client("127.0.0.1", "::ffff:127.0.0.1", &["203.0.113.7"]), "203.0.113.7");
        assert_eq!(client("127.0.0.1", "::ffff:198.51.100.1", &["203.0.113.7"]), "198.51.100.1");
        assert_eq!(
            client("127.0.0.1,10.0.0.0/8", "127.0.0.1", &["203.0.113.7, ::ffff:10.1.2.3"]),
            "203.0.113.7"
        );
        assert_eq!(client("127.0.0.1", "127.0.0.1", &["::ffff:203.0.113.7"]), "203.0.113.7");
    }
}
