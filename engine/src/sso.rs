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

use crate::admin::{AdminUser, Username};
use crate::model::{Role, TenantSlug};
use crate::secret::SecretBox;
use crate::store::settings::SignInSettings;
use crate::store::sso::{ClaimRule, SsoAuthMethod, SsoConfig};

/// Where the provider sends the person back: the redirect URI to register there.
pub const CALLBACK_PATH: &str = "/sso/callback";

/// The callback URL of Toolgate at `issuer` (its public base URL).
pub fn callback_url(issuer: &str) -> String {
    format!("{issuer}{CALLBACK_PATH}")
}
use crate::store::{self, Actor, Change};
use crate::{Error, Result};

/// How people sign in: the configuration document's `sign_in`, the admin API's and the
/// panel's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignInConfig {
    /// `false`: only `break_glass_owner` signs in with a password.
    #[serde(default = "crate::store::yes")]
    pub local_passwords: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_glass_owner: Option<String>,
    /// The OpenID provider; none: no single sign-on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sso: Option<SsoConfig>,
}

/// What the sign-in pages offer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignInOptions {
    /// The provider's name on the "Sign in with …" button.
    pub sso: Option<String>,
    pub local_passwords: bool,
}

/// How people sign in now (the provider's secret as `{set: true}`).
pub async fn current(db: &mut sqlx::PgConnection) -> Result<SignInConfig> {
    let settings = store::settings::sign_in(&mut *db).await?;
    let sso = store::sso::get(&mut *db).await?.map(|stored| stored.config);
    Ok(SignInConfig {
        local_passwords: settings.local_passwords,
        break_glass_owner: settings.break_glass_owner,
        sso,
    })
}

/// `config` as a diff shows it: the provider's secret as `{set: true}` (with `changed` when a
/// value is given), never its value.
pub(crate) fn redacted(config: &SignInConfig, stored_secret: Option<&str>) -> Result<serde_json::Value> {
    let mut view = serde_json::to_value(config).expect("sign-in settings serialise");
    if let Some(secret) = config.sso.as_ref().and_then(|sso| sso.client_secret.as_ref()) {
        view["sso"]["client_secret"] = secret.redact("sso.client_secret", stored_secret)?;
    }
    Ok(view)
}

/// The sealed secret of the stored provider, for [`redacted`].
pub(crate) async fn stored_secret(db: impl sqlx::PgExecutor<'_>) -> Result<Option<String>> {
    Ok(store::sso::get(db).await?.and_then(|stored| stored.sealed_secret))
}

/// What the sign-in pages offer, for anyone.
pub async fn options(pool: &PgPool) -> Result<SignInOptions> {
    let mut db = pool.acquire().await?;
    let config = current(&mut db).await?;
    Ok(SignInOptions { sso: config.sso.map(|sso| sso.display_name), local_passwords: config.local_passwords })
}

/// Checks `config`'s rules; the message says what is wrong and where. Rules name tenants of
/// `tenants` when given (a configuration document's), else of the database.
async fn check(
    db: &mut sqlx::PgConnection,
    config: &SignInConfig,
    tenants: Option<&[&TenantSlug]>,
) -> Result<()> {
    if !config.local_passwords {
        if config.sso.is_none() {
            return Err(Error::Invalid(
                "local passwords can be turned off only with an OpenID provider to sign in with".into(),
            ));
        }
        let owner = config.break_glass_owner.as_deref().ok_or_else(|| {
            Error::Invalid("with local passwords off, name the break-glass owner who keeps a password".into())
        })?;
        let account = store::admins::by_username(&mut *db, owner).await?;
        if !account
            .is_some_and(|a| a.role == Role::Owner && a.password_hash.is_some() && a.disabled_at.is_none())
        {
            return Err(Error::Invalid(format!(
                "break_glass_owner: `{owner}` is not an owner with a password"
            )));
        }
    }
    let Some(sso) = &config.sso else { return Ok(()) };
    let place = |field: &str, why: &str| Error::Invalid(format!("sso.{field}: {why}"));
    if !(1..=100).contains(&sso.display_name.trim().chars().count()) {
        return Err(place("display_name", "1 to 100 characters"));
    }
    let issuer = reqwest::Url::parse(&sso.issuer).map_err(|_| place("issuer", "not a URL"))?;
    if !matches!(issuer.scheme(), "https" | "http") {
        return Err(place("issuer", "an https URL"));
    }
    if sso.client_id.trim().is_empty() {
        return Err(place("client_id", "required"));
    }
    if sso.groups_claim.trim().is_empty() {
        return Err(place("groups_claim", "the name of a claim, such as `groups`"));
    }
    if !sso.scopes.iter().any(|s| s == "openid") {
        return Err(place("scopes", "must include `openid`"));
    }
    for (i, rule) in sso.rules.iter().enumerate() {
        let at = |why: String| Error::Invalid(format!("sso.rules[{i}]: {why}"));
        match (&rule.email_domain, &rule.group) {
            (Some(_), None) | (None, Some(_)) => {}
            _ => return Err(at("give exactly one of `email_domain` and `group`".into())),
        }
        if rule.email_domain.as_deref().is_some_and(|d| d.is_empty() || d.contains('@')) {
            return Err(at("`email_domain` is a domain such as `acme.com`".into()));
        }
        match (rule.role, &rule.tenant) {
            (Role::Owner, Some(_)) => {
                return Err(at("an owner rule names no tenant (owners have every tenant)".into()));
            }
            (Role::Owner, None) => {}
            (_, None) => return Err(at(format!("a {} rule names its tenant", rule.role))),
            (_, Some(slug)) => {
                let known = match tenants {
                    Some(tenants) => tenants.contains(&slug),
                    None => store::tenants::get(&mut *db, slug).await.is_ok(),
                };
                if !known {
                    return Err(at(format!("no tenant `{slug}`")));
                }
            }
        }
    }
    Ok(())
}

/// Writes `config` in the caller's transaction (unaudited: the caller records it); with
/// `dry_run`, only checks it. The provider's secret follows the rule of every stored secret.
/// `tenants`: see [`check`].
pub(crate) async fn write(
    tx: &mut sqlx::PgTransaction<'_>,
    secrets: &SecretBox,
    config: &SignInConfig,
    tenants: Option<&[&TenantSlug]>,
    dry_run: bool,
) -> Result<()> {
    check(tx, config, tenants).await?;
    let stored = store::sso::get(&mut **tx).await?;
    let sealed = match (&config.sso, &stored) {
        (Some(sso), stored) => {
            // A secret never follows its provider to another issuer or client.
            let kept = stored
                .as_ref()
                .filter(|s| s.config.issuer == sso.issuer && s.config.client_id == sso.client_id)
                .and_then(|s| s.sealed_secret.as_deref());
            match &sso.client_secret {
                Some(secret) => Some(secret.seal(secrets, "sso.client_secret", kept)?),
                None => None,
            }
        }
        (None, _) => None,
    };
    if dry_run {
        return Ok(());
    }
    let settings = SignInSettings {
        local_passwords: config.local_passwords,
        break_glass_owner: config.break_glass_owner.clone(),
    };
    store::settings::write_sign_in(&mut **tx, &settings).await?;
    match &config.sso {
        Some(sso) => store::sso::put(&mut **tx, sso, sealed.as_deref()).await,
        None => store::sso::delete(&mut **tx).await,
    }
}

/// Sets how people sign in, audited.
pub async fn update(
    pool: &PgPool,
    secrets: &SecretBox,
    actor: &Actor,
    config: &SignInConfig,
) -> Result<SignInConfig> {
    let mut tx = pool.begin().await?;
    let before = current(&mut tx).await?;
    write(&mut tx, secrets, config, None, false).await?;
    let after = current(&mut tx).await?;
    store::commit(tx, actor, Change::new("update", "sign_in", "global").before(&before).after(&after))
        .await?;
    Ok(after)
}

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

/// What the provider said of the person, checked.
struct Person {
    issuer: String,
    subject: String,
    email: Option<String>,
    email_verified: bool,
    preferred_username: Option<String>,
    groups: Vec<String>,
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

/// The role and tenants `config`'s rules give `person`, if any.
fn placed(config: &SsoConfig, person: &Person) -> Option<(Role, Vec<TenantSlug>)> {
    let domain = person
        .email
        .as_deref()
        .filter(|_| person.email_verified || !config.require_verified_email)
        .and_then(|email| email.rsplit_once('@'))
        .map(|(_, domain)| domain);
    let matched: Vec<&ClaimRule> = config
        .rules
        .iter()
        .filter(|rule| match (&rule.email_domain, &rule.group) {
            (Some(want), _) => domain.is_some_and(|d| d.eq_ignore_ascii_case(want)),
            (_, Some(group)) => person.groups.iter().any(|g| g == group),
            _ => false,
        })
        .collect();
    let role = matched.iter().map(|rule| rule.role).max()?;
    let mut tenants: Vec<TenantSlug> = matched.iter().filter_map(|rule| rule.tenant.clone()).collect();
    tenants.sort();
    tenants.dedup();
    Some((role, tenants))
}

async fn sign_in(pool: &PgPool, config: &SsoConfig, person: &Person) -> Result<AdminUser, SsoError> {
    let mut tx = pool.begin().await?;
    let existing = store::admins::by_sso(&mut *tx, &person.issuer, &person.subject).await?;
    let Some((role, tenants)) = placed(config, person) else {
        let who = person.email.clone().unwrap_or_else(|| person.subject.clone());
        // Someone the rules no longer admit keeps no tenant: their apps stop working.
        if let Some(account) = existing {
            store::admins::set_from_claims(&mut tx, account.id, Role::Member, person.email.as_deref(), &[])
                .await?;
            let what = serde_json::json!({"role": Role::Member, "tenants": [], "reason": "no sign-in rule admits it"});
            store::commit(
                tx,
                &Actor::system(),
                Change::new("sso_refused", "account", &account.username).after(&what),
            )
            .await?;
        }
        return Err(SsoError::NoAccess(who));
    };
    let mut tenant_ids = Vec::new();
    for slug in &tenants {
        if let Ok(tenant) = store::tenants::get(&mut *tx, slug).await {
            tenant_ids.push(tenant.id);
        }
    }
    let (id, action) = match existing {
        Some(account) if account.disabled_at.is_some() => return Err(SsoError::Disabled),
        Some(account) => (account.id, "sso_sign_in"),
        None => {
            let name = [person.preferred_username.as_deref(), person.email.as_deref()]
                .into_iter()
                .flatten()
                .find_map(|name| Username::parse(name).ok())
                .ok_or_else(|| SsoError::Invalid("the provider gave no usable username or email".into()))?;
            let id = store::admins::insert_without_password(
                &mut *tx,
                name.as_str(),
                role,
                person.email.as_deref(),
                Some((&person.issuer, &person.subject)),
            )
            .await?
            .ok_or_else(|| SsoError::NameTaken(name.as_str().to_string()))?;
            (id, "sso_create")
        }
    };
    store::admins::set_from_claims(&mut tx, id, role, person.email.as_deref(), &tenant_ids).await?;
    let account = store::admins::by_id(&mut *tx, id).await?.ok_or_else(|| Error::not_found("the account"))?;
    let what = serde_json::json!({"role": role, "tenants": tenants, "issuer": person.issuer});
    store::commit(
        tx,
        &Actor::admin(&account.username),
        Change::new(action, "account", &account.username).after(&what),
    )
    .await?;
    tracing::info!(username = account.username, %role, "signed in through the OpenID provider");
    Ok(AdminUser::from(account))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(rules: Vec<ClaimRule>) -> SsoConfig {
        SsoConfig {
            display_name: "Acme ID".into(),
            issuer: "https://id.acme.test".into(),
            client_id: "toolgate".into(),
            client_secret: None,
            scopes: vec!["openid".into()],
            auth_method: SsoAuthMethod::ClientSecretBasic,
            require_verified_email: true,
            groups_claim: "groups".into(),
            rules,
        }
    }

    fn person(email: &str, verified: bool, groups: &[&str]) -> Person {
        Person {
            issuer: "https://id.acme.test".into(),
            subject: "1".into(),
            email: Some(email.into()),
            email_verified: verified,
            preferred_username: None,
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    fn rule(email_domain: Option<&str>, group: Option<&str>, tenant: Option<&str>, role: Role) -> ClaimRule {
        ClaimRule {
            email_domain: email_domain.map(str::to_string),
            group: group.map(str::to_string),
            tenant: tenant.map(|t| TenantSlug::parse(t).unwrap()),
            role,
        }
    }

    #[test]
    fn rules_give_the_highest_role_and_every_matched_tenant() {
        let config = config(vec![
            rule(Some("acme.test"), None, Some("acme"), Role::Member),
            rule(None, Some("globex-admins"), Some("globex"), Role::TenantAdmin),
            rule(None, Some("toolgate-owners"), None, Role::Owner),
        ]);
        let (role, tenants) = placed(&config, &person("ann@acme.test", true, &["globex-admins"])).unwrap();
        assert_eq!(role, Role::TenantAdmin);
        assert_eq!(tenants.iter().map(TenantSlug::as_str).collect::<Vec<_>>(), ["acme", "globex"]);
        assert_eq!(placed(&config, &person("o@x.test", false, &["toolgate-owners"])).unwrap().0, Role::Owner);
        assert!(placed(&config, &person("eve@evil.test", true, &[])).is_none());
    }

    #[test]
    fn an_unverified_email_matches_no_domain_rule() {
        let strict = config(vec![rule(Some("acme.test"), None, Some("acme"), Role::Member)]);
        assert!(placed(&strict, &person("ann@acme.test", false, &[])).is_none());
        let lenient = SsoConfig { require_verified_email: false, ..strict };
        assert!(placed(&lenient, &person("ann@acme.test", false, &[])).is_some());
    }

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
