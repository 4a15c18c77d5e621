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
        days => {
            let days = whole_number("expiry in days", days, 3650)?;
            Ok(Some(time::OffsetDateTime::now_utc() + time::Duration::days(days.into())))
        }
    }
}

/// `text` as a whole number from 1 to `most`, or what is wrong with it, said of `what`: not a
/// number, too small or too large.
pub fn whole_number(what: &str, text: &str, most: u32) -> Result<u32, PanelError> {
    let wrong = |why: String| PanelError::invalid(format!("{what}: `{text}` {why}"));
    let too_large = || wrong(format!("is too large (at most {most})"));
    match text.parse::<u64>() {
        Ok(0) => Err(wrong("is too small (at least 1)".into())),
        Ok(n) => u32::try_from(n).ok().filter(|&n| n <= most).ok_or_else(too_large),
        Err(err) if *err.kind() == std::num::IntErrorKind::PosOverflow => Err(too_large()),
        Err(_)
            if text.len() > 1 && text.starts_with('-') && text[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            Err(wrong("is too small (at least 1)".into()))
        }
        Err(_) => Err(wrong("is not a whole number".into())),
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

#[cfg(test)]
mod tests {
    use super::whole_number;

    #[test]
    fn a_wrong_number_is_told_too_large_too_small_or_not_a_number() {
        let said = |text: &str| whole_number("calls per day", text, 3650).unwrap_err().to_string();
        assert_eq!(whole_number("n", "42", 3650).unwrap(), 42);
        assert_eq!(
            said("99999999999999999999"),
            "calls per day: `99999999999999999999` is too large (at most 3650)"
        );
        assert_eq!(said("3651"), "calls per day: `3651` is too large (at most 3650)");
        assert_eq!(said("0"), "calls per day: `0` is too small (at least 1)");
        assert_eq!(said("-3"), "calls per day: `-3` is too small (at least 1)");
        assert_eq!(said("ten"), "calls per day: `ten` is not a whole number");
        assert_eq!(said("1.5"), "calls per day: `1.5` is not a whole number");
        assert_eq!(said("-"), "calls per day: `-` is not a whole number");
    }
}
