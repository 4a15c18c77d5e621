//! Signing in through an external OpenID Connect provider (single sign-on), with the
//! `openidconnect` crate: discovery, the authorization code flow with PKCE and a nonce, and the
//! ID token checked (signature, issuer, audience, expiry, nonce) before any claim is read.
//!
//! Claim rules map people to a role and tenants — a verified email domain, or a value of the
//! `groups` claim — and are applied at every sign-in; the first sign-in creates the account
//! (just in time), linked to the provider's subject, never to an existing local account of the
//! same name. Local passwords can be turned off for everyone but one break-glass owner.
//!
//! Provider quirks: Toolgate never sends RFC 8707 `resource` to the provider (Entra ID's v2
//! endpoints refuse it); the token endpoint's client authentication is chosen per provider
//! (`client_secret_basic` or `client_secret_post`); Entra's multi-tenant `common` issuer does not
//! match the issuer its tokens carry — configure the tenant's own issuer
//! (`https://login.microsoftonline.com/<tenant id>/v2.0`).
//!
//! Here: the callback's path, the errors and the person as the provider told of them; the work is
//! in `settings` (how people sign in, as configured), `provider` (the sign-in at the provider)
//! and `accounts` (the claim rules, and the account they make).

mod accounts;
mod provider;
mod settings;

pub use provider::{PendingSignIn, finish, start};
pub use settings::{SignInConfig, SignInOptions, current, options, update};
pub(crate) use settings::{redacted, stored_secret, write};

use crate::Error;

/// Where the provider sends the person back: the redirect URI to register there.
pub const CALLBACK_PATH: &str = "/sso/callback";

/// The callback URL of Toolgate at `issuer` (its public base URL).
pub fn callback_url(issuer: &str) -> String {
    format!("{issuer}{CALLBACK_PATH}")
}

/// Why a single sign-on did not sign the person in. The sign-in page shows the [`code`]'s own
/// words (a link must not put text of its own on the page); the message is for the log.
///
/// [`code`]: SsoError::code
#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    #[error("single sign-on is not set up")]
    NotConfigured,
    /// The provider could not be reached, or answered wrongly.
    #[error("the sign-in provider could not be reached or answered wrongly: {0}")]
    Provider(String),
    /// The answer belongs to no sign-in of this browser, or the ID token is not valid.
    #[error("the sign-in did not complete: {0}")]
    Invalid(String),
    /// No sign-in rule admits the person; an account they had keeps no tenant.
    #[error("no sign-in rule admits {0}")]
    NoAccess(String),
    #[error("the account is disabled")]
    Disabled,
    /// A local account has the name the person would get.
    #[error("a local account named `{0}` exists already")]
    NameTaken(String),
    #[error(transparent)]
    Failed(#[from] Error),
}

impl SsoError {
    /// A stable code of what happened, for the sign-in page.
    pub fn code(&self) -> &'static str {
        match self {
            SsoError::NotConfigured => "not_configured",
            SsoError::Provider(_) => "provider",
            SsoError::Invalid(_) => "invalid",
            SsoError::NoAccess(_) => "no_access",
            SsoError::Disabled => "disabled",
            SsoError::NameTaken(_) => "name_taken",
            SsoError::Failed(_) => "failed",
        }
    }
}

impl From<sqlx::Error> for SsoError {
    fn from(err: sqlx::Error) -> Self {
        SsoError::Failed(err.into())
    }
}

/// What the provider said of the person, checked.
struct Person {
    issuer: String,
    subject: String,
    email: Option<String>,
    email_verified: bool,
    preferred_username: Option<String>,
    groups: Vec<String>,
}
