//! The authorization server's HTTP side: discovery (RFC 9728 protected resource metadata per
//! endpoint, RFC 8414 authorization server metadata), dynamic registration (RFC 7591), the
//! token and revocation endpoints (RFC 6749, RFC 7009) — served by every process — and the
//! authorization endpoint, which needs the panel's sign-in and consent page (`toolgate serve`
//! only). Single sign-on through the OpenID provider lives here too (`/sso/start`,
//! `/sso/callback`). The rules are `engine::oauth`'s and `engine::sso`'s.

use app::auth::ssr::ClientAddress;
use app::state::AppState;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use engine::oauth::{
    AuthServer, AuthorizeError, AuthorizeParams, MCP_PREFIX, OAuthError, REST_PATH, Registration, SCOPES,
    TokenParams,
};
use headers::HeaderMapExt;
use headers::authorization::{Authorization, Basic};
use serde_json::json;
use tower_http::cors::CorsLayer;
use tower_sessions::Session;

use crate::gateway::{Credentials, log_internal};

/// Where protected resource metadata lives (RFC 9728 §3.1); the resource's path follows.
pub const PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";

/// The discovery, registration, token and revocation endpoints, for every process. Browsers'
/// clients may call them from any origin (no cookies are involved).
pub fn public_router(credentials: Credentials, oauth: AuthServer) -> Router {
    let metadata = Router::new()
        .route(&format!("{PROTECTED_RESOURCE}/mcp/{{tenant}}"), get(mcp_resource))
        .route(&format!("{PROTECTED_RESOURCE}{REST_PATH}"), get(rest_resource))
        .route("/.well-known/oauth-authorization-server", get(server_metadata))
        .route(engine::service::upstreams::oauth::CLIENT_METADATA_PATH, get(upstream_client))
        .with_state(credentials);
    let endpoints = Router::new()
        .route("/oauth/register", post(register))
        .route("/oauth/token", post(token))
        .route("/oauth/revoke", post(revoke))
        .with_state(oauth);
    metadata.merge(endpoints).layer(CorsLayer::permissive().allow_credentials(false))
}

/// The authorization endpoint and single sign-on, beside the panel (they need its session).
pub fn panel_router() -> Router<AppState> {
    Router::new()
        .route("/oauth/authorize", get(authorize))
        .route("/sso/start", get(sso_start))
        .route(engine::sso::CALLBACK_PATH, get(sso_callback))
        .route(engine::service::upstreams::oauth::START_PATH, get(upstream_start))
        .route(engine::service::upstreams::oauth::CALLBACK_PATH, get(upstream_callback))
}

async fn mcp_resource(
    State(credentials): State<Credentials>,
    headers: HeaderMap,
    Path(tenant): Path<String>,
) -> Response {
    if engine::model::TenantSlug::parse(&tenant).is_err() {
        return StatusCode::NOT_FOUND.into_response();
    }
    resource_metadata(
        &credentials.issuer(&headers),
        &format!("{MCP_PREFIX}{tenant}"),
        &format!("Toolgate tenant {tenant}"),
    )
}

async fn rest_resource(State(credentials): State<Credentials>, headers: HeaderMap) -> Response {
    resource_metadata(&credentials.issuer(&headers), REST_PATH, "Toolgate REST API")
}

fn resource_metadata(issuer: &str, path: &str, name: &str) -> Response {
    Json(json!({
        "resource": format!("{issuer}{path}"),
        "authorization_servers": [issuer],
        "scopes_supported": SCOPES.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        "bearer_methods_supported": ["header"],
        "resource_name": name,
    }))
    .into_response()
}

async fn server_metadata(State(credentials): State<Credentials>, headers: HeaderMap) -> Response {
    let issuer = credentials.issuer(&headers);
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth/authorize"),
        "token_endpoint": format!("{issuer}/oauth/token"),
        "registration_endpoint": format!("{issuer}/oauth/register"),
        "revocation_endpoint": format!("{issuer}/oauth/revoke"),
        "scopes_supported": SCOPES.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
        "service_documentation": "https://github.com/toolgate/toolgate#connecting-agents-with-oauth",
    }))
    .into_response()
}

/// An OAuth error answer: `invalid_client` 401, too many registrations 429, Toolgate's own
/// failures 500 or 503 (details only in the log), the rest 400.
fn oauth_error(err: OAuthError) -> Response {
    let (status, code, description) = match err {
        OAuthError::Refused { code, description } => {
            let status = match code {
                "invalid_client" => StatusCode::UNAUTHORIZED,
                "too_many_registrations" => StatusCode::TOO_MANY_REQUESTS,
                _ => StatusCode::BAD_REQUEST,
            };
            (status, code, description)
        }
        OAuthError::Failed(engine::Error::Unavailable(_)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            "the database cannot be reached right now; try again shortly".to_string(),
        ),
        OAuthError::Failed(err) => (StatusCode::INTERNAL_SERVER_ERROR, "server_error", log_internal(&err)),
    };
    let mut response =
        (status, Json(json!({"error": code, "error_description": description}))).into_response();
    if status == StatusCode::UNAUTHORIZED {
        // RFC 6749 §5.2: the scheme the client may authenticate with.
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(r#"Basic realm="toolgate""#));
    }
    no_store(response)
}

/// Tokens and registrations are never cached (RFC 6749 §5.1).
fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response.headers_mut().insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

async fn register(
    State(oauth): State<AuthServer>,
    ClientAddress(client): ClientAddress,
    body: Result<Json<Registration>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(registration) = match body {
        Ok(body) => body,
        Err(rejection) => {
            return oauth_error(OAuthError::Refused {
                code: "invalid_client_metadata",
                description: rejection.body_text(),
            });
        }
    };
    match oauth.register(registration, &registrant(client)).await {
        Ok(registered) => no_store((StatusCode::CREATED, Json(registered)).into_response()),
        Err(err) => oauth_error(err),
    }
}

/// Whose dynamic registrations count together: an IPv4 address, or an IPv6 /64 (one host has
/// a whole /64 to choose from).
fn registrant(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let [a, b, c, d, ..] = v6.segments();
                format!("{a:x}:{b:x}:{c:x}:{d:x}::/64")
            }
        },
    }
}

/// The client's id and secret from HTTP Basic (each form-urlencoded, RFC 6749 §2.3.1).
fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let basic = headers.typed_get::<Authorization<Basic>>()?;
    let decode = |part: &str| {
        form_urlencoded::parse(format!("v={part}").as_bytes()).next().map(|(_, v)| v.into_owned())
    };
    Some((decode(basic.username())?, decode(basic.password())?))
}

async fn token(
    State(oauth): State<AuthServer>,
    headers: HeaderMap,
    form: Result<Form<TokenParams>, axum::extract::rejection::FormRejection>,
) -> Response {
    let Ok(Form(params)) = form else {
        return oauth_error(OAuthError::Refused {
            code: "invalid_request",
            description: "the request must be a form (application/x-www-form-urlencoded)".into(),
        });
    };
    match oauth.token(params, basic_credentials(&headers)).await {
        Ok(tokens) => no_store(Json(tokens).into_response()),
        Err(err) => oauth_error(err),
    }
}

#[derive(serde::Deserialize)]
struct Revocation {
    token: Option<String>,
    #[serde(flatten)]
    client: TokenParams,
}

async fn revoke(
    State(oauth): State<AuthServer>,
    headers: HeaderMap,
    Form(form): Form<Revocation>,
) -> Response {
    let Some(token) = form.token else {
        return oauth_error(OAuthError::Refused {
            code: "invalid_request",
            description: "token is missing".into(),
        });
    };
    match oauth.revoke(&token, &form.client, basic_credentials(&headers)).await {
        Ok(()) => StatusCode::OK.into_response(),
        Err(err) => oauth_error(err),
    }
}

/// `text` for HTML (an attribute's value too).
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Sends the browser on to `to` (a path of this site) so that it keeps the panel's session: a
/// navigation that began on another site (a client's web page, the OpenID provider) carries no
/// `SameSite=Strict` cookie through redirects, so there a page of this site sends it on.
fn onward(headers: &HeaderMap, to: &str) -> Response {
    if headers.get("sec-fetch-site").is_some_and(|site| site == "cross-site") {
        let to = escaped(to);
        let page = format!(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={to}\">\
             <title>Toolgate</title></head><body><p><a href=\"{to}\">Continue to Toolgate</a></p></body></html>"
        );
        return Html(page).into_response();
    }
    Redirect::to(to).into_response()
}

/// A page for the person when the request cannot go back to the client (an unknown client, a
/// redirect URI it did not register): never redirected, so nothing reaches an attacker's URI.
fn refusal_page(message: &str) -> Response {
    let escaped = escaped(message);
    let page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Sign-in refused · Toolgate</title>\
         <link rel=\"stylesheet\" href=\"/pkg/toolgate.css\"></head><body><main class=\"login\"><div class=\"card login-card\">\
         <h1 class=\"brand\">Toolgate</h1><h2>This app's sign-in request was refused</h2><p class=\"error\" role=\"alert\">{escaped}</p>\
         <p class=\"muted\">Nothing was sent to the app. Tell its developer, or check how it is configured.</p></div></main></body></html>"
    );
    let policy = HeaderValue::from_static("default-src 'none'; style-src 'self'; frame-ancestors 'none'");
    (StatusCode::BAD_REQUEST, [(header::CONTENT_SECURITY_POLICY, policy)], Html(page)).into_response()
}

/// The authorization endpoint: checks the request, then answers it at once when the signed-in
/// person allowed this before, or sends them to the consent page (through sign-in).
async fn authorize(
    State(services): State<AppState>,
    session: Session,
    headers: HeaderMap,
    Query(params): Query<AuthorizeParams>,
) -> Response {
    let issuer = engine::oauth::issuer(services.public_url.as_deref(), &headers);
    let id = match services.oauth.begin(&issuer, params).await {
        Ok(id) => id,
        Err(AuthorizeError::Show(message)) => return refusal_page(&message),
        Err(err @ AuthorizeError::Redirect { .. }) => {
            return Redirect::to(&err.location().expect("a redirect")).into_response();
        }
        Err(AuthorizeError::Failed(err)) => return crate::gateway::Failure::from(err).into_response(),
    };
    if let Ok(Some(account)) = app::auth::ssr::signed_in(&session, &services.pool).await
        && let Ok(Some(back)) = services.oauth.remembered(id, &account).await
    {
        return Redirect::to(&back).into_response();
    }
    onward(&headers, &format!("/authorize/{id}"))
}

/// The cookie holding a sign-in under way at the OpenID provider (sealed, so only this site
/// reads or makes it), and where it goes next. `SameSite=Lax`, unlike the panel's session: it
/// must come back with the provider's redirect, a navigation from another site.
const SSO_COOKIE: &str = "toolgate_sso";

/// What the sign-in cookie carries.
#[derive(serde::Serialize, serde::Deserialize)]
struct SignInUnderWay {
    pending: engine::sso::PendingSignIn,
    next: Option<String>,
}

/// The `Set-Cookie` value of the sign-in cookie: `value` for ten minutes, or its removal.
fn sso_cookie(state: &AppState, value: Option<String>) -> HeaderValue {
    use tower_sessions::cookie::{Cookie, SameSite};
    let secure = state.public_url.as_deref().is_some_and(|url| url.starts_with("https://"));
    let max_age = if value.is_some() { time::Duration::minutes(10) } else { time::Duration::ZERO };
    let cookie = Cookie::build((SSO_COOKIE, value.unwrap_or_default()))
        .path("/sso")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .max_age(max_age)
        .build();
    HeaderValue::from_str(&cookie.to_string()).expect("a sealed value is cookie-safe")
}

/// The sign-in under way that the request's cookie carries, if it is one this site sealed.
fn sign_in_under_way(state: &AppState, headers: &HeaderMap) -> Option<SignInUnderWay> {
    use tower_sessions::cookie::Cookie;
    let sealed = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|header| Cookie::split_parse(header.to_string()).filter_map(Result::ok))
        .find(|cookie| cookie.name() == SSO_COOKIE)?
        .value()
        .to_string();
    serde_json::from_str(&state.secrets.decrypt(&sealed).ok()?).ok()
}

#[derive(serde::Deserialize)]
struct Next {
    next: Option<String>,
}

/// Toolgate's single sign-on callback, as this request reaches Toolgate.
fn callback_url(state: &AppState, headers: &HeaderMap) -> String {
    engine::sso::callback_url(&engine::oauth::issuer(state.public_url.as_deref(), headers))
}

async fn sso_start(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(Next { next }): Query<Next>,
) -> Response {
    match engine::sso::start(&state.pool, &state.secrets, &callback_url(&state, &headers)).await {
        Ok((url, pending)) => {
            let under_way = serde_json::to_string(&SignInUnderWay { pending, next }).expect("serialises");
            let mut response = Redirect::to(&url).into_response();
            response
                .headers_mut()
                .insert(header::SET_COOKIE, sso_cookie(&state, Some(state.secrets.encrypt(&under_way))));
            response
        }
        Err(err) => sso_failed(err),
    }
}

#[derive(serde::Deserialize)]
struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

async fn sso_callback(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    Query(answer): Query<Callback>,
) -> Response {
    let mut response = finish_sign_in(&state, &session, &headers, answer).await;
    // The sign-in under way is answered, whichever way it went.
    response.headers_mut().append(header::SET_COOKIE, sso_cookie(&state, None));
    response
}

async fn finish_sign_in(
    state: &AppState,
    session: &Session,
    headers: &HeaderMap,
    answer: Callback,
) -> Response {
    let Some(SignInUnderWay { pending, next }) = sign_in_under_way(state, headers) else {
        return sso_failed(engine::sso::SsoError::Invalid("no sign-in is under way in this browser".into()));
    };
    let (Some(code), Some(returned_state)) = (answer.code, answer.state) else {
        let why = answer.error_description.or(answer.error).unwrap_or_else(|| "no code came back".into());
        return sso_failed(engine::sso::SsoError::Invalid(format!("the provider said: {why}")));
    };
    let callback = callback_url(state, headers);
    match engine::sso::finish(&state.pool, &state.secrets, &callback, pending, &code, &returned_state).await {
        Ok(account) => match app::auth::ssr::open_session(session, &account).await {
            Ok(()) => onward(headers, &app::auth::ssr::landing(&account, next.as_deref())),
            Err(err) => crate::gateway::internal(&err),
        },
        Err(err) => sso_failed(err),
    }
}

/// Back to the sign-in page, which shows why.
fn sso_failed(err: engine::sso::SsoError) -> Response {
    tracing::warn!(error = %err, "single sign-on failed");
    Redirect::to(&format!("/login?sso_error={}", err.code())).into_response()
}

/// Toolgate's Client ID Metadata Document, as the OAuth client of upstream servers.
async fn upstream_client(State(credentials): State<Credentials>, headers: HeaderMap) -> Response {
    Json(engine::service::upstreams::oauth::client_metadata(&credentials.issuer(&headers))).into_response()
}

#[derive(serde::Deserialize)]
struct UpstreamStart {
    server: String,
    /// `me` (the default), `shared`, or `tenant:<slug>`.
    #[serde(rename = "for")]
    owner: Option<String>,
}

/// A page telling the person why an upstream authorization did not go through.
fn upstream_failed(message: &str) -> Response {
    tracing::warn!(error = %message, "an upstream authorization failed");
    let escaped = escaped(message);
    let page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Authorization failed · Toolgate</title>\
         <link rel=\"stylesheet\" href=\"/pkg/toolgate.css\"></head><body><main class=\"login\"><div class=\"card login-card\">\
         <h1 class=\"brand\">Toolgate</h1><h2>The authorization did not go through</h2><p class=\"error\" role=\"alert\">{escaped}</p>\
         <p><a href=\"/\">Back to Toolgate</a></p></div></main></body></html>"
    );
    let policy = HeaderValue::from_static("default-src 'none'; style-src 'self'; frame-ancestors 'none'");
    (StatusCode::BAD_REQUEST, [(header::CONTENT_SECURITY_POLICY, policy)], Html(page)).into_response()
}

/// Starts authorizing an upstream server for the signed-in person (through sign-in first):
/// sends the browser to the server's authorization server.
async fn upstream_start(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    uri: axum::http::Uri,
    Query(start): Query<UpstreamStart>,
) -> Response {
    let here = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let account = match app::auth::ssr::signed_in(&session, &state.pool).await {
        Ok(Some(account)) if account.password_temporary => {
            return onward(&headers, &app::auth::ssr::landing(&account, Some(here)));
        }
        Ok(Some(account)) => account,
        Ok(None) => {
            let next: String = form_urlencoded::byte_serialize(here.as_bytes()).collect();
            return onward(&headers, &format!("/login?next={next}"));
        }
        Err(err) => return upstream_failed(&err.to_string()),
    };
    let base = engine::oauth::issuer(state.public_url.as_deref(), &headers);
    let wanted = start.owner.as_deref().unwrap_or("me");
    let begun = async {
        let server = engine::model::Name::parse(&start.server).map_err(|err| err.to_string())?;
        let (source_id, owner) =
            engine::service::upstreams::owner_for(&state.pool, &account, &server, wanted)
                .await
                .map_err(|err| err.to_string())?;
        // Back where the connection shows: one's own page, the tenant's (a tenant
        // administrator cannot open the server's), else the server's.
        let return_to = match wanted.strip_prefix("tenant:") {
            _ if wanted == "me" => "/connections".to_string(),
            Some(slug) => format!("/tenants/{slug}"),
            None => format!("/servers/{}", server.as_str()),
        };
        let actor = engine::model::Actor::admin(&account.username);
        let started_by = (account.id, &actor);
        engine::service::upstreams::oauth::begin(
            &state.pool,
            &state.secrets,
            &base,
            source_id,
            owner,
            started_by,
            &return_to,
        )
        .await
        .map(|begun| (begun, return_to))
        .map_err(|err| err.to_string())
    };
    match begun.await {
        Ok((engine::service::upstreams::oauth::Begun::Browser(url), _)) => Redirect::to(&url).into_response(),
        Ok((engine::service::upstreams::oauth::Begun::Authorized, back)) => {
            Redirect::to(&back).into_response()
        }
        Err(err) => upstream_failed(&err),
    }
}

#[derive(serde::Deserialize)]
struct UpstreamCallback {
    code: Option<String>,
    state: Option<String>,
    iss: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// Where a server's authorization server sends the person back: the code is exchanged and the
/// tokens kept, if this browser's person started the authorization.
async fn upstream_callback(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    uri: axum::http::Uri,
    Query(answer): Query<UpstreamCallback>,
) -> Response {
    // The panel's session cookie does not come with a navigation from another site: a page of
    // this one sends the browser on, with it.
    if headers.get("sec-fetch-site").is_some_and(|site| site == "cross-site") {
        return onward(&headers, uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
    }
    let (Some(code), Some(returned_state)) = (answer.code, answer.state) else {
        let why = answer.error_description.or(answer.error).unwrap_or_else(|| "no code came back".into());
        return upstream_failed(&format!("the authorization server said: {why}"));
    };
    let account = match app::auth::ssr::signed_in(&session, &state.pool).await {
        Ok(Some(account)) => account,
        Ok(None) => return upstream_failed("sign in to Toolgate in this browser, then authorize again"),
        Err(err) => return upstream_failed(&err.to_string()),
    };
    let base = engine::oauth::issuer(state.public_url.as_deref(), &headers);
    let actor = engine::model::Actor::admin(&account.username);
    let finished = engine::service::upstreams::oauth::finish(
        &state.pool,
        &state.secrets,
        &base,
        (account.id, &actor),
        &returned_state,
        &code,
        answer.iss.as_deref(),
    )
    .await;
    match finished {
        Ok(back) => Redirect::to(&back).into_response(),
        Err(err) => upstream_failed(&err.to_string()),
    }
}
