//! Signing in and out, and who is signed in.
//!
//! Sessions live in PostgreSQL (tower-sessions); the session holds only the administrator's
//! id and the stamp of the password it was opened with, and every request re-reads the
//! account, so a deleted account or a new password ends the account's sessions at once.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::PanelError;

/// The signed-in account, as the panel shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Me {
    pub username: String,
    pub role: String,
    /// Owners see every page; a tenant administrator only those of her tenants.
    pub owner: bool,
    /// A member sees only its connected apps.
    pub member: bool,
    /// The account signs in with a password (not only through single sign-on).
    pub has_password: bool,
    /// It signed in with a one-time password: it must choose its own before anything else.
    pub password_temporary: bool,
}

/// How the sign-in page offers to sign in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInOffer {
    /// The OpenID provider's name, when single sign-on is set up.
    pub sso: Option<String>,
    pub local_passwords: bool,
}

#[server(endpoint = "sign_in_choices")]
pub async fn sign_in_choices() -> Result<SignInOffer, PanelError> {
    let state = expect_context::<crate::state::AppState>();
    let options = engine::service::sign_in::options(&state).await?;
    Ok(SignInOffer { sso: options.sso, local_passwords: options.local_passwords })
}

/// Signs in with a password, then goes to `next` (a path of this site; else the start page).
#[server(endpoint = "login")]
pub async fn login(username: String, password: String, next: Option<String>) -> Result<(), PanelError> {
    let state = expect_context::<crate::state::AppState>();
    let session = ssr::session().await?;
    let address = ssr::client_address().await;
    let admin = engine::admin::login(&state.pool, &state.login_policy, username.trim(), &password, &address)
        .await
        .map_err(ssr::login_refused)?;
    ssr::open_session(&session, &admin).await.map_err(|e| PanelError::internal(&e))?;
    leptos_axum::redirect(&ssr::landing(&admin, next.as_deref()));
    Ok(())
}

#[server(endpoint = "logout")]
pub async fn logout() -> Result<(), PanelError> {
    let session = ssr::session().await?;
    session.flush().await.map_err(|e| PanelError::internal(&e))?;
    leptos_axum::redirect("/login");
    Ok(())
}

#[server(endpoint = "me")]
pub async fn current_admin() -> Result<Me, PanelError> {
    // Not `require_admin`: an account with a one-time password learns it must change it.
    let state = expect_context::<crate::state::AppState>();
    let admin =
        ssr::signed_in(&ssr::session().await?, &state.pool).await?.ok_or_else(PanelError::unauthorized)?;
    Ok(Me {
        owner: admin.role == engine::admin::Role::Owner,
        member: admin.role == engine::admin::Role::Member,
        role: admin.role.to_string(),
        username: admin.username,
        has_password: admin.has_password,
        password_temporary: admin.password_temporary,
    })
}

/// Replaces the signed-in account's password (typed twice), then goes to `next` (where a
/// one-time password's sign-in was going). The account's other sessions end.
#[server(endpoint = "change_password")]
pub async fn change_password(
    current: String,
    password: String,
    again: String,
    next: Option<String>,
) -> Result<(), PanelError> {
    use engine::admin::LoginError;

    let state = expect_context::<crate::state::AppState>();
    let session = ssr::session().await?;
    let account = ssr::signed_in(&session, &state.pool).await?.ok_or_else(PanelError::unauthorized)?;
    if password != again {
        return Err(PanelError::invalid("the two new passwords differ"));
    }
    let address = ssr::client_address().await;
    let changed = engine::admin::change_password(
        &state.pool,
        &state.login_policy,
        &account,
        &current,
        password,
        &address,
    )
    .await
    .map_err(|err| match err {
        LoginError::InvalidCredentials => PanelError::invalid("the current password is not right"),
        LoginError::Failed(err) => err.into(),
        err => ssr::login_refused(err),
    })?;
    ssr::open_session(&session, &changed).await.map_err(|e| PanelError::internal(&e))?;
    leptos_axum::redirect(&ssr::landing(&changed, next.as_deref()));
    Ok(())
}

#[cfg(feature = "ssr")]
pub mod ssr {
    use engine::admin::AdminUser;
    use engine::service::PgPool;
    use leptos::prelude::expect_context;
    use tower_sessions::Session;

    use crate::error::PanelError;

    /// The address a request comes from: the TCP peer's, or behind a trusted reverse proxy the
    /// client's it forwards (`TOOLGATE_TRUSTED_PROXIES`). The server's middleware
    /// (`web::client_address`) works it out and puts it into the request's extensions; this
    /// extractor reads it there, and without it falls back to the peer, never to a header.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct ClientAddress(pub std::net::IpAddr);

    impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ClientAddress {
        type Rejection = (axum::http::StatusCode, &'static str);

        async fn from_request_parts(
            parts: &mut axum::http::request::Parts,
            _state: &S,
        ) -> Result<Self, Self::Rejection> {
            if let Some(address) = parts.extensions.get::<ClientAddress>() {
                return Ok(*address);
            }
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|axum::extract::ConnectInfo(peer)| ClientAddress(peer.ip().to_canonical()))
                .ok_or((axum::http::StatusCode::INTERNAL_SERVER_ERROR, "the client's address is unknown"))
        }
    }

    /// The session key holding the signed-in administrator's id.
    pub const ADMIN_ID: &str = "admin_id";
    /// The session key holding the stamp of the password the session was opened with.
    pub const PASSWORD_STAMP: &str = "password_stamp";

    /// The address of the request being served, as sign-in throttling counts it.
    pub async fn client_address() -> String {
        leptos_axum::extract::<ClientAddress>()
            .await
            .map(|ClientAddress(ip)| ip.to_string())
            .unwrap_or_else(|_| "unknown".to_string())
    }

    /// How a refused sign-in (or password check) reaches the panel.
    pub fn login_refused(err: engine::admin::LoginError) -> PanelError {
        use axum::http::StatusCode;
        use engine::admin::LoginError;
        match err {
            LoginError::InvalidCredentials => PanelError::rejected(StatusCode::UNAUTHORIZED, err),
            LoginError::Locked { .. } => PanelError::rejected(StatusCode::TOO_MANY_REQUESTS, err),
            LoginError::Disabled | LoginError::PasswordsOff => {
                PanelError::rejected(StatusCode::FORBIDDEN, err)
            }
            LoginError::Failed(err) => err.into(),
        }
    }

    pub async fn session() -> Result<Session, PanelError> {
        leptos_axum::extract::<Session>().await.map_err(|e| PanelError::internal(&e))
    }

    /// The administrator this session belongs to, if any. A session whose account was
    /// deleted, or whose password changed since the session was opened, is emptied.
    pub async fn signed_in(session: &Session, pool: &PgPool) -> Result<Option<AdminUser>, PanelError> {
        let Some(id) = session.get::<uuid::Uuid>(ADMIN_ID).await.map_err(|e| PanelError::internal(&e))?
        else {
            return Ok(None);
        };
        let stamp = session.get::<String>(PASSWORD_STAMP).await.map_err(|e| PanelError::internal(&e))?;
        let admin = engine::admin::find(pool, id).await?;
        let admin = admin.filter(|admin| stamp.as_deref() == Some(admin.password_stamp.as_str()));
        if admin.is_none() {
            session.flush().await.map_err(|e| PanelError::internal(&e))?;
        }
        Ok(admin)
    }

    /// Opens a signed-in session for `account` (a password, an invitation or single sign-on).
    pub async fn open_session(
        session: &Session,
        account: &AdminUser,
    ) -> Result<(), tower_sessions::session::Error> {
        // A fresh session id at sign-in defeats session fixation.
        session.cycle_id().await?;
        session.insert(ADMIN_ID, account.id).await?;
        session.insert(PASSWORD_STAMP, &account.password_stamp).await
    }

    /// The page where an account chooses its password.
    pub const ACCOUNT_PAGE: &str = "/account";

    /// Where `account` goes after signing in: `next` when it is a path of this site and the
    /// account may see it, else its start page (members: their connected apps). An account
    /// with a one-time password chooses its own first, then goes on there.
    pub fn landing(account: &AdminUser, next: Option<&str>) -> String {
        let onward = onward(account, next);
        if !account.password_temporary || crate::is_page(&onward, ACCOUNT_PAGE) {
            return onward;
        }
        let query = form_urlencoded::Serializer::new(String::new()).append_pair("next", &onward).finish();
        format!("{ACCOUNT_PAGE}?{query}")
    }

    fn onward(account: &AdminUser, next: Option<&str>) -> String {
        // A path of this site only: printable ASCII (browsers drop tabs and newlines, which
        // would turn `/\t/evil` into `//evil`), no backslash, not `//`.
        let next = next.filter(|path| {
            path.starts_with('/')
                && !path.starts_with("//")
                && path.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
        });
        match next {
            Some(path) if account.role != engine::admin::Role::Member || crate::member_page(path) => {
                path.to_string()
            }
            _ if account.role == engine::admin::Role::Member => "/apps".to_string(),
            _ => "/".to_string(),
        }
    }

    /// The signed-in administrator, or a 401: the first line of every protected server
    /// function. An account with a one-time password is refused until it chose its own.
    pub async fn require_admin() -> Result<AdminUser, PanelError> {
        let state = expect_context::<crate::state::AppState>();
        let account =
            signed_in(&session().await?, &state.pool).await?.ok_or_else(PanelError::unauthorized)?;
        if account.password_temporary {
            return Err(PanelError::rejected(
                axum::http::StatusCode::FORBIDDEN,
                "you signed in with a one-time password: choose your own on the Account page first",
            ));
        }
        Ok(account)
    }
}
