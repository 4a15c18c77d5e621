//! The sign-in at the provider, with `openidconnect`: discovery, an HTTP client that follows no
//! redirects, the authorization code flow with PKCE and a nonce, and the ID token checked
//! before its claims are read.

use std::time::Duration;

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType, CoreGenderClaim,
    CoreJsonWebKey, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata,
    CoreRevocableToken, CoreRevocationErrorResponse, CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AdditionalClaims, AuthType, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EmptyExtraTokenFields,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, IdTokenFields, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, StandardErrorResponse, StandardTokenResponse,
};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use super::accounts::sign_in;
use super::{Person, SsoError};
use crate::admin::AdminUser;
use crate::secret::SecretBox;
use crate::store;
use crate::store::sso::{SsoAuthMethod, SsoConfig};
use crate::{Error, Result};

/// A sign-in under way at the provider, kept in the person's session until it comes back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PendingSignIn {
    state: String,
    nonce: String,
    verifier: String,
}

/// The ID token's claims besides the standard ones, where the groups claim is found.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Groups {
    #[serde(flatten)]
    claims: serde_json::Map<String, serde_json::Value>,
}

impl AdditionalClaims for Groups {}

impl Groups {
    /// The values of the claim `name`: a list of names, or one name (providers differ).
    fn names(&self, name: &str) -> Vec<String> {
        match self.claims.get(name) {
            Some(serde_json::Value::String(one)) => vec![one.clone()],
            Some(serde_json::Value::Array(many)) => {
                many.iter().filter_map(|g| g.as_str().map(str::to_string)).collect()
            }
            _ => Vec::new(),
        }
    }
}

type Tokens = StandardTokenResponse<
    IdTokenFields<
        Groups,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;

type OidcClient = openidconnect::Client<
    Groups,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    Tokens,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The HTTP client openidconnect uses: no redirects followed, bounded in time.
struct Http(reqwest::Client);

impl Http {
    fn new() -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .expect("a plain HTTP client builds");
        Http(client)
    }
}

impl<'c> openidconnect::AsyncHttpClient<'c> for Http {
    type Error = reqwest::Error;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<openidconnect::HttpResponse, reqwest::Error>> + Send + 'c>,
    >;

    fn call(&'c self, request: openidconnect::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let response = self.0.execute(reqwest::Request::try_from(request)?).await?;
            let mut answer = openidconnect::HttpResponse::new(Vec::new());
            *answer.status_mut() = response.status();
            *answer.headers_mut() = response.headers().clone();
            *answer.body_mut() = response.bytes().await?.to_vec();
            Ok(answer)
        })
    }
}

/// The configured provider's client, from its discovery document.
async fn client(
    pool: &PgPool,
    secrets: &SecretBox,
    redirect: &str,
) -> Result<(OidcClient, SsoConfig), SsoError> {
    let stored = store::sso::get(pool).await?.ok_or(SsoError::NotConfigured)?;
    let issuer =
        IssuerUrl::new(stored.config.issuer.clone()).map_err(|err| SsoError::Provider(err.to_string()))?;
    let metadata = CoreProviderMetadata::discover_async(issuer, &Http::new())
        .await
        .map_err(|err| SsoError::Provider(chain(&err)))?;
    let secret = match &stored.sealed_secret {
        Some(sealed) => Some(ClientSecret::new(
            secrets
                .decrypt(sealed)
                .map_err(|err| Error::Internal(format!("the provider's secret: {err}").into()))?,
        )),
        None => None,
    };
    let auth_type = match stored.config.auth_method {
        SsoAuthMethod::ClientSecretBasic => AuthType::BasicAuth,
        SsoAuthMethod::ClientSecretPost => AuthType::RequestBody,
    };
    let redirect = RedirectUrl::new(redirect.to_string()).map_err(|err| Error::Internal(err.into()))?;
    let client =
        OidcClient::from_provider_metadata(metadata, ClientId::new(stored.config.client_id.clone()), secret)
            .set_auth_type(auth_type)
            .set_redirect_uri(redirect);
    Ok((client, stored.config))
}

/// An error with its causes, for messages.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

/// Starts a sign-in: the provider's URL to send the browser to, and what to keep until it
/// comes back to `redirect` (Toolgate's callback).
pub async fn start(
    pool: &PgPool,
    secrets: &SecretBox,
    redirect: &str,
) -> Result<(String, PendingSignIn), SsoError> {
    let (client, config) = client(pool, secrets, redirect).await?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state, nonce) = client
        .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
        .add_scopes(config.scopes.iter().filter(|s| *s != "openid").cloned().map(Scope::new))
        .set_pkce_challenge(challenge)
        .url();
    let pending = PendingSignIn {
        state: state.secret().clone(),
        nonce: nonce.secret().clone(),
        verifier: verifier.secret().clone(),
    };
    Ok((url.to_string(), pending))
}

/// Finishes a sign-in with the provider's `code` and `state`: the signed-in account, created
/// the first time and updated from the claims every time.
#[tracing::instrument(skip_all, err)]
pub async fn finish(
    pool: &PgPool,
    secrets: &SecretBox,
    redirect: &str,
    pending: PendingSignIn,
    code: &str,
    state: &str,
) -> Result<AdminUser, SsoError> {
    if !bool::from(subtle::ConstantTimeEq::ct_eq(state.as_bytes(), pending.state.as_bytes())) {
        return Err(SsoError::Invalid("the answer does not belong to this sign-in (state)".into()));
    }
    let (client, config) = client(pool, secrets, redirect).await?;
    let request = client
        .exchange_code(AuthorizationCode::new(code.to_string()))
        .map_err(|err| SsoError::Provider(err.to_string()))?
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier));
    let tokens = request.request_async(&Http::new()).await.map_err(|err| SsoError::Provider(chain(&err)))?;
    let id_token = openidconnect::TokenResponse::id_token(&tokens)
        .ok_or_else(|| SsoError::Provider("the provider sent no ID token".into()))?;
    let claims = id_token
        .claims(&client.id_token_verifier(), &Nonce::new(pending.nonce))
        .map_err(|err| SsoError::Invalid(format!("the ID token was not valid: {err}")))?;
    let person = Person {
        issuer: claims.issuer().to_string(),
        subject: claims.subject().to_string(),
        email: claims.email().map(|e| e.to_string().to_ascii_lowercase()),
        email_verified: claims.email_verified().unwrap_or(false),
        preferred_username: claims.preferred_username().map(|u| u.to_string()),
        groups: claims.additional_claims().names(&config.groups_claim),
    };
    sign_in(pool, &config, &person).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_may_be_one_name_or_a_list() {
        let one: Groups = serde_json::from_value(serde_json::json!({"groups": "a"})).unwrap();
        let many: Groups =
            serde_json::from_value(serde_json::json!({"https://acme/groups": ["a", "b"]})).unwrap();
        assert_eq!(one.names("groups"), ["a"]);
        assert_eq!(many.names("https://acme/groups"), ["a", "b"]);
        assert!(many.names("groups").is_empty());
    }
}
