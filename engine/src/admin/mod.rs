//! Accounts: owners, tenant administrators and tenant members; argon2id passwords and
//! throttled sign-in. (Accounts that sign in through an OpenID provider are made in [`crate::sso`].)
//!
//! Sign-in attempts are recorded in PostgreSQL before the password is checked (so parallel
//! guesses count each other) over a sliding window, and every replica applies the same limits:
//! after a few failures for an account each attempt is slowed; after more, the account is
//! refused from the address that failed (never from others: strangers cannot lock the owner
//! out), and an address failing for many accounts is refused altogether, until the window has
//! passed. At most [`CONCURRENT_HASHES`] argon2 computations (about 19 MiB each) run at once.
//!
//! Here: the names and the account as the rest of Toolgate sees it; the work is in `password`
//! (passwords and their hashes), `manage` (creating and changing accounts, and what each
//! manages) and `sign_in` (signing in with a password, under the limits).

mod manage;
mod password;
mod sign_in;

use serde::Serialize;
use uuid::Uuid;

pub use manage::{
    Scope, accounts, assign_tenant, create, create_account, delete, ensure_owner, find, reset_password,
    scope, set_disabled, set_password, set_role, set_tenants,
};
pub use password::{CONCURRENT_HASHES, MIN_PASSWORD_LEN, Password, PasswordHash};
pub use sign_in::{LoginError, LoginPolicy, change_password, login};

use password::password_stamp;

pub use crate::model::Role;
use crate::store;
pub use crate::store::admins::AccountRow;
use crate::{Error, Result};

/// The rule a username keeps.
const USERNAME_RULE: &str = "a username is 1 to 64 characters: letters, digits, `_`, `.`, `@` or `-`, starting with a letter or digit";

/// A validated administrator name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Username(String);

impl Username {
    pub fn parse(name: &str) -> Result<Self> {
        let mut chars = name.chars();
        let valid = name.len() <= 64
            && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
            && chars.all(|c| c.is_ascii_alphanumeric() || "_.@-".contains(c));
        valid.then(|| Username(name.to_string())).ok_or_else(|| Error::Invalid(USERNAME_RULE.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An administrator as the rest of Toolgate sees it (no password hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdminUser {
    pub id: Uuid,
    pub username: String,
    pub role: Role,
    /// Changes with the password: a session opened under another stamp is no longer valid.
    #[serde(skip)]
    pub password_stamp: String,
    /// The account signs in with a password (not only through single sign-on).
    #[serde(skip)]
    pub has_password: bool,
    /// Its password was printed once: it may do nothing but choose its own.
    #[serde(skip)]
    pub password_temporary: bool,
}

impl From<store::admins::Account> for AdminUser {
    fn from(account: store::admins::Account) -> Self {
        AdminUser {
            id: account.id,
            username: account.username,
            role: account.role,
            password_stamp: password_stamp(account.password_hash.as_deref()),
            has_password: account.password_hash.is_some(),
            password_temporary: account.password_temporary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn username_pattern() {
        for ok in ["admin", "a", "jane.doe@example.com", "ops_team-1"] {
            assert!(Username::parse(ok).is_ok(), "{ok} should be valid");
        }
        for bad in ["", "-admin", "has space", "<script>", &"x".repeat(65)] {
            assert!(Username::parse(bad).is_err(), "{bad} should be invalid");
        }
    }
}
