//! Middleware around the panel: the sign-in guard, who a session belongs to (for the admin
//! API), the cross-site write check and the security headers.

use std::sync::Arc;

use app::auth::ssr::{landing, signed_in};
use app::state::AppState;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use tower::ServiceBuilder;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_sessions::Session;

use crate::admin_api::SessionAdmin;

/// The panel's server functions live under this prefix; they answer 401 themselves.
const SERVER_FN_PREFIX: &str = "/api/";
const LOGIN_PAGE: &str = "/login";

/// Pages anyone may open: signing in, and taking an invitation.
const PUBLIC_PAGES: &[&str] = &[LOGIN_PAGE, "/invite/"];

/// Panel pages need a signed-in account: anyone else is sent to the login page, which brings
/// them back to the page they asked for; a signed-in account visiting the login page goes to
/// its start page, and a member only ever sees the member pages (its connected apps, consent).
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
        Ok(Some(account))
            if account.role == engine::admin::Role::Member
                && !public
                && !app::MEMBER_PAGES.iter().any(|page| path.starts_with(page)) =>
        {
            Redirect::to(&landing(&account, None)).into_response()
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
        Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, err.to_string()).into_response(),
    }
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
/// a Content-Security-Policy unless the panel page set its own, and HSTS when Toolgate is
/// served over https.
pub fn security_headers(router: Router, https: bool) -> Router {
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
            .option_layer(hsts),
    )
}

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
}
