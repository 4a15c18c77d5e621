//! Server-side helpers of the server functions: who is calling, what they may touch, and how
//! engine errors reach the panel.

use engine::service::{Admin, Owner};
use leptos::prelude::expect_context;

use crate::auth::ssr::require_admin;
use crate::error::PanelError;
use crate::state::AppState;

pub fn state() -> AppState {
    expect_context::<AppState>()
}

/// The signed-in administrator (owner or tenant administrator), or a 401 (a 403 for a member).
pub async fn caller() -> Result<Admin, PanelError> {
    let user = require_admin().await?;
    let scope = engine::admin::scope(&state().pool, &user).await?;
    Ok(Admin::signed_in(&user.username, scope))
}

/// The signed-in owner: the global configuration (servers, tools, groups, audit) is theirs.
pub async fn owner() -> Result<Owner, PanelError> {
    Ok(caller().await?.owner()?)
}

/// The base URL people and clients reach Toolgate at (the OAuth issuer): the public URL, or
/// this request's host.
pub async fn issuer() -> String {
    let headers = leptos_axum::extract::<axum::http::HeaderMap>().await.unwrap_or_default();
    engine::oauth::issuer(state().public_url.as_deref(), &headers)
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
