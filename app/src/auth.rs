//! Signing in and out, and who is signed in.
//!
//! Sessions live in PostgreSQL (tower-sessions); the session holds only the administrator's
//! id and the stamp of the password it was opened with, and every request re-reads the
//! account, so a deleted account or a new password ends the account's sessions at once.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::PanelError;

/// The signed-in administrator, as the panel shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Me {
    pub username: String,
    pub role: String,
    /// Owners see every page; a tenant administrator only those of her tenants.
    pub owner: bool,
}

#[server(endpoint = "login")]
pub async fn login(username: String, password: String) -> Result<(), PanelError> {
    use axum::extract::ConnectInfo;
    use axum::http::StatusCode;
    use engine::admin::LoginError;
    use std::net::SocketAddr;

    let state = expect_context::<crate::state::AppState>();
    let session = ssr::session().await?;
    let address = leptos_axum::extract::<ConnectInfo<SocketAddr>>()
        .await
        .map(|ConnectInfo(addr)| addr.ip().to_string())
        .unwrap_or_else(|_| "unknown".to_string());
    let admin = engine::admin::login(&state.pool, &state.login_policy, username.trim(), &password, &address)
        .await
        .map_err(|err| match err {
            LoginError::InvalidCredentials => PanelError::rejected(StatusCode::UNAUTHORIZED, err),
            LoginError::Locked { .. } => PanelError::rejected(StatusCode::TOO_MANY_REQUESTS, err),
            LoginError::Failed(err) => err.into(),
        })?;
    // A fresh session id at sign-in defeats session fixation.
    session.cycle_id().await.map_err(|e| PanelError::internal(&e))?;
    session.insert(ssr::ADMIN_ID, admin.id).await.map_err(|e| PanelError::internal(&e))?;
    session.insert(ssr::PASSWORD_STAMP, &admin.password_stamp).await.map_err(|e| PanelError::internal(&e))?;
    leptos_axum::redirect("/");
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
    let admin = ssr::require_admin().await?;
    let owner = admin.role == engine::admin::Role::Owner;
    Ok(Me { username: admin.username, role: admin.role.to_string(), owner })
}

#[cfg(feature = "ssr")]
pub mod ssr {
    use engine::admin::AdminUser;
    use engine::db::PgPool;
    use leptos::prelude::expect_context;
    use tower_sessions::Session;

    use crate::error::PanelError;

    /// The session key holding the signed-in administrator's id.
    pub const ADMIN_ID: &str = "admin_id";
    /// The session key holding the stamp of the password the session was opened with.
    pub const PASSWORD_STAMP: &str = "password_stamp";

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

    /// The signed-in administrator, or a 401: the first line of every protected server
    /// function.
    pub async fn require_admin() -> Result<AdminUser, PanelError> {
        let state = expect_context::<crate::state::AppState>();
        signed_in(&session().await?, &state.pool).await?.ok_or_else(PanelError::unauthorized)
    }
}
