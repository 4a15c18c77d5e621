//! Server-side helpers of the server functions: who is calling, what they may touch, and how
//! engine errors reach the panel.

use axum::http::StatusCode;
use engine::admin::{AdminUser, Role, Scope};
use engine::model::TenantSlug;
use engine::store::Actor;
use leptos::prelude::expect_context;

use crate::auth::ssr::require_admin;
use crate::error::PanelError;
use crate::state::AppState;

pub fn state() -> AppState {
    expect_context::<AppState>()
}

/// The signed-in administrator of a server function call, with what they may manage.
pub struct Caller {
    pub admin: AdminUser,
    pub actor: Actor,
    pub scope: Scope,
}

impl Caller {
    /// A tenant named by the caller, if the caller manages it. A tenant outside the scope
    /// is answered as unknown, so its existence is not revealed.
    pub fn tenant(&self, slug: &str) -> Result<TenantSlug, PanelError> {
        let unknown = || PanelError::rejected(StatusCode::NOT_FOUND, format!("no tenant `{slug}`"));
        let slug = TenantSlug::parse(slug).map_err(|_| unknown())?;
        if self.scope.allows(slug.as_str()) { Ok(slug) } else { Err(unknown()) }
    }
}

/// The signed-in administrator (owner or tenant administrator), or a 401.
pub async fn caller() -> Result<Caller, PanelError> {
    let admin = require_admin().await?;
    let scope = engine::admin::scope(&state().pool, &admin).await.map_err(|e| PanelError::internal(&e))?;
    Ok(Caller { actor: Actor::admin(&admin.username), admin, scope })
}

/// The signed-in owner: the global configuration (servers, tools, groups, audit) is theirs.
pub async fn owner() -> Result<Caller, PanelError> {
    let caller = caller().await?;
    if caller.admin.role != Role::Owner {
        return Err(PanelError::rejected(StatusCode::FORBIDDEN, "only owners may do this"));
    }
    Ok(caller)
}

/// An expiry given as whole days from now (1 to 3650); empty means never.
pub fn expiry_in_days(days: &str) -> Result<Option<time::OffsetDateTime>, PanelError> {
    match days.trim() {
        "" => Ok(None),
        days => match days.parse::<i64>() {
            Ok(days @ 1..=3650) => Ok(Some(time::OffsetDateTime::now_utc() + time::Duration::days(days))),
            _ => Err(PanelError::invalid("expiry: a whole number of days from 1 to 3650")),
        },
    }
}

/// Splits `a, b ,c` into trimmed, non-empty parts.
pub fn comma_list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// A time to the minute, as the panel shows it: `2026-11-30 14:05`.
pub fn minute(at: time::OffsetDateTime) -> String {
    format!("{} {:02}:{:02}", at.date(), at.hour(), at.minute())
}
