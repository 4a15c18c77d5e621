//! The token endpoint (RFC 6749 §4.1.3, §6): a code or a refresh token, spent once, for new
//! tokens, with the client authenticated and PKCE checked; and revocation (RFC 7009).

use time::OffsetDateTime;
use uuid::Uuid;

use super::{AuthServer, OAuthError, tokens};
use crate::secret::{digest as hash, random_token as random_secret};
use crate::store::oauth::{self as store, AuthMethod, Client};
use crate::store::{self as stores, Actor};

/// A refresh token presented again this soon after its first use is a retry (or a concurrent
/// refresh) of its client, answered with new tokens; later, a reuse that revokes the grant.
const REFRESH_RETRY: time::Duration = time::Duration::seconds(10);

/// A token request's form (RFC 6749 §4.1.3, §6), client credentials aside.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct TokenParams {
    pub grant_type: Option<String>,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    pub resource: Option<String>,
    pub scope: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// The successful answer of the token endpoint.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Tokens {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: u64,
    pub refresh_token: String,
    pub scope: String,
}

/// Whether `verifier` is the PKCE verifier of the S256 `challenge` (RFC 7636 §4.6).
fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    use oauth2::{PkceCodeChallenge, PkceCodeVerifier};
    // Checked first: the crate asserts the length (a panic on a client's bad input).
    let valid = (43..=128).contains(&verifier.len())
        && verifier.chars().all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c));
    if !valid {
        return false;
    }
    let computed = PkceCodeChallenge::from_code_verifier_sha256(&PkceCodeVerifier::new(verifier.to_string()));
    subtle::ConstantTimeEq::ct_eq(computed.as_str().as_bytes(), challenge.as_bytes()).into()
}

impl AuthServer {
    /// The token endpoint: a code or a refresh token for new tokens.
    #[tracing::instrument(skip_all, fields(grant_type = params.grant_type.as_deref()))]
    pub async fn token(
        &self,
        params: TokenParams,
        basic: Option<(String, String)>,
    ) -> Result<Tokens, OAuthError> {
        let client = self.authenticate_client(&params, basic).await?;
        let pool = &self.inner.pool;
        // What is spent is spent only with the tokens it buys: a failure on the way leaves the
        // code or refresh token as it was, for the client's retry.
        let mut tx = pool.begin().await?;
        let spent = match params.grant_type.as_deref() {
            Some("authorization_code") => {
                let code = params
                    .code
                    .as_deref()
                    .ok_or_else(|| OAuthError::refused("invalid_request", "code is missing"))?;
                store::spend_code(&mut *tx, &hash(code)).await?
            }
            Some("refresh_token") => {
                let token = params
                    .refresh_token
                    .as_deref()
                    .ok_or_else(|| OAuthError::refused("invalid_request", "refresh_token is missing"))?;
                store::spend_refresh_token(&mut *tx, &hash(token), REFRESH_RETRY).await?
            }
            Some(other) => {
                return Err(OAuthError::refused(
                    "unsupported_grant_type",
                    format!("`{other}` is not supported: authorization_code or refresh_token"),
                ));
            }
            None => return Err(OAuthError::refused("invalid_request", "grant_type is missing")),
        };
        let what =
            if params.grant_type.as_deref() == Some("refresh_token") { "refresh token" } else { "code" };
        let spent = spent
            .ok_or_else(|| OAuthError::refused("invalid_grant", format!("unknown or revoked {what}")))?;
        if spent.client_id != client.id {
            return Err(OAuthError::refused(
                "invalid_grant",
                format!("this {what} was issued to another client"),
            ));
        }
        // A refresh token presented again within moments is a retry or a concurrent refresh of the
        // same client (its answer was lost, two windows share its storage), not a thief.
        if spent.used_before.is_some() && !spent.retry {
            drop(tx);
            store::revoke_for_reuse(pool, spent.grant_id, what).await?;
            self.revoked();
            tracing::warn!(grant = %spent.grant_id, what, "one-use secret presented twice: grant revoked");
            return Err(OAuthError::refused(
                "invalid_grant",
                format!(
                    "this {what} was used already; every token of its authorization is revoked, sign in again"
                ),
            ));
        }
        if spent.expired {
            return Err(OAuthError::refused("invalid_grant", format!("this {what} has expired")));
        }
        if let Some(expected) = &spent.redirect_uri
            && params.redirect_uri.as_ref().is_some_and(|given| given != expected)
        {
            return Err(OAuthError::refused(
                "invalid_grant",
                "redirect_uri differs from the authorization request's",
            ));
        }
        if let Some(challenge) = &spent.code_challenge {
            let verifier = params
                .code_verifier
                .as_deref()
                .ok_or_else(|| OAuthError::refused("invalid_request", "code_verifier is missing (PKCE)"))?;
            if !pkce_matches(verifier, challenge) {
                return Err(OAuthError::refused(
                    "invalid_grant",
                    "code_verifier does not match the code_challenge",
                ));
            }
        }
        if let Some(resource) = &params.resource
            && resource.trim_end_matches('/') != spent.resource
        {
            return Err(OAuthError::refused(
                "invalid_target",
                format!("this authorization is for `{}`, not `{resource}`", spent.resource),
            ));
        }
        // A scope beyond the grant is refused; the tokens carry the grant's scopes (with the one
        // scope there is, nothing narrower can be asked for).
        let asked = params.scope.as_deref().unwrap_or_default();
        if let Some(beyond) = asked.split(' ').find(|s| !s.is_empty() && !spent.scopes.iter().any(|g| g == s))
        {
            return Err(OAuthError::refused("invalid_scope", format!("scope `{beyond}` was not granted")));
        }
        let Some(first_use) = spent.used_before else {
            let tokens = self.issue(&mut tx, spent.grant_id, &spent.scopes).await?;
            tx.commit().await?;
            return Ok(tokens);
        };
        // A retry: what the first use bought goes, on every replica, so that one chain of tokens
        // lives on (whoever else presented it in the window is left with nothing).
        store::drop_tokens_since(&mut *tx, spent.grant_id, first_use).await?;
        let tokens = self.issue(&mut tx, spent.grant_id, &spent.scopes).await?;
        stores::notify_and_commit(tx, "oauth_token").await?;
        self.revoked();
        Ok(tokens)
    }

    async fn issue(
        &self,
        tx: &mut sqlx::PgTransaction<'_>,
        grant: Uuid,
        scopes: &[String],
    ) -> Result<Tokens, OAuthError> {
        let config = &self.inner.config;
        let (access, refresh) = (random_secret(tokens::ACCESS_PREFIX), random_secret("tgr_"));
        let now = OffsetDateTime::now_utc();
        store::insert_tokens(
            &mut **tx,
            grant,
            (&hash(&access), now + config.access_token_ttl),
            (&hash(&refresh), now + config.refresh_token_ttl),
        )
        .await?;
        Ok(Tokens {
            access_token: access,
            token_type: "Bearer",
            expires_in: config.access_token_ttl.as_secs(),
            refresh_token: refresh,
            scope: scopes.join(" "),
        })
    }

    /// The client a token or revocation request comes from: its id, and its secret when it
    /// has one (HTTP Basic or the form, as it registered).
    async fn authenticate_client(
        &self,
        params: &TokenParams,
        basic: Option<(String, String)>,
    ) -> Result<Client, OAuthError> {
        let invalid = |why: &str| OAuthError::refused("invalid_client", why.to_string());
        let (id, secret, method) = match basic {
            Some((id, secret)) => (id, Some(secret), AuthMethod::ClientSecretBasic),
            None => {
                let id = params.client_id.clone().ok_or_else(|| invalid("client_id is missing"))?;
                let method = match params.client_secret {
                    Some(_) => AuthMethod::ClientSecretPost,
                    None => AuthMethod::None,
                };
                (id, params.client_secret.clone(), method)
            }
        };
        let client = store::client(&self.inner.pool, &id).await?.ok_or_else(|| invalid("unknown client"))?;
        match (&client.secret_hash, secret) {
            (None, None) => Ok(client),
            (None, Some(_)) => Err(invalid("this client is public: it has no secret to send")),
            (Some(_), None) => Err(invalid("this client must authenticate with its secret")),
            (Some(stored), Some(secret)) => {
                let equal: bool =
                    subtle::ConstantTimeEq::ct_eq(stored.as_slice(), hash(&secret).as_slice()).into();
                if !equal || method != client.auth_method {
                    return Err(invalid("client authentication failed"));
                }
                Ok(client)
            }
        }
    }

    /// RFC 7009 revocation: a refresh token revokes its whole grant, an access token itself.
    /// An unknown token is not an error (the answer is the same either way).
    pub async fn revoke(
        &self,
        token: &str,
        params: &TokenParams,
        basic: Option<(String, String)>,
    ) -> Result<(), OAuthError> {
        let client = self.authenticate_client(params, basic).await?;
        let pool = &self.inner.pool;
        let token_hash = hash(token);
        if let Some(grant) = store::refresh_token_grant(pool, &token_hash, &client.id).await? {
            let actor = Actor::client(&client.id);
            stores::oauth::revoke_grant(pool, &actor, grant, None, None).await?;
        } else {
            let mut tx = pool.begin().await?;
            if store::delete_access_token(&mut *tx, &token_hash, &client.id).await? {
                stores::notify_and_commit(tx, "oauth_token").await?;
            }
        }
        self.revoked();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_checks_the_s256_challenge() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_matches(verifier, challenge));
        assert!(!pkce_matches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXl", challenge));
        assert!(!pkce_matches("short", challenge));
        assert!(!pkce_matches(&"a".repeat(129), challenge));
    }
}
