//! The authorization endpoint: an authorization request checked and kept until its person
//! consents, the consent page's view of it, and the person's answer (a code, or a refusal)
//! sent back to the client's redirect URI.

use std::time::Duration;

use time::OffsetDateTime;
use uuid::Uuid;

use super::{Audience, AuthServer, MCP_PREFIX, OAuthError, SCOPES, clients};
use crate::admin::AdminUser;
use crate::model::TenantSlug;
use crate::secret::{digest as hash, random_token as random_secret};
use crate::store::oauth::{self as store, Client};
use crate::store::{self as stores, Actor, Change};

/// How long an authorization code, and a request waiting for consent, are valid.
const CODE_TTL: Duration = Duration::from_secs(60);
const REQUEST_TTL: Duration = Duration::from_secs(10 * 60);

/// An authorization request that cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum AuthorizeError {
    /// Shown to the person, never redirected: the client or its redirect URI cannot be trusted.
    #[error("{0}")]
    Show(String),
    /// Sent back to the client at its redirect URI (RFC 6749 §4.1.2.1).
    #[error("{code}: {description}")]
    Redirect {
        redirect_uri: String,
        state: Option<String>,
        issuer: String,
        code: &'static str,
        description: String,
    },
    /// Toolgate's own fault (the database): HTTP 500 or 503, the details only in the log.
    #[error(transparent)]
    Failed(#[from] crate::Error),
}

impl AuthorizeError {
    /// The URL the person's browser goes back to.
    pub fn location(&self) -> Option<String> {
        let AuthorizeError::Redirect { redirect_uri, state, issuer, code, description } = self else {
            return None;
        };
        Some(with_query(
            redirect_uri,
            &[
                ("error", code),
                ("error_description", description),
                ("state", state.as_deref().unwrap_or("")),
                ("iss", issuer),
            ],
        ))
    }
}

/// The parameters of an authorization request, as the client's browser brought them.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct AuthorizeParams {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub resource: Option<String>,
    pub scope: Option<String>,
}

/// An authorization waiting for consent, as the consent page shows it.
#[derive(Debug, Clone)]
pub struct Pending {
    pub client: Client,
    /// The host of the client's id when it is a URL (a metadata document's).
    pub client_host: Option<String>,
    /// The host the answer goes back to, and whether that is this machine only.
    pub redirect_host: String,
    pub redirect_is_local: bool,
    /// The tenant of an MCP endpoint; `None` for the REST API, where one of `choices` is picked.
    pub tenant: Option<TenantSlug>,
    /// The tenants the person may authorize for (the REST API's choice).
    pub choices: Vec<String>,
    pub scopes: Vec<(&'static str, &'static str)>,
    pub resource: String,
    /// Whether this person may authorize for the request's tenant.
    pub allowed: bool,
}

/// `base` with `pairs` added to its query (empty values left out).
fn with_query(base: &str, pairs: &[(&str, &str)]) -> String {
    let mut url = match reqwest::Url::parse(base) {
        Ok(url) => url,
        Err(_) => return base.to_string(),
    };
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
            query.append_pair(name, value);
        }
    }
    url.to_string()
}

/// The known scopes of a space-separated `scope` (others are left out: RFC 6749 lets the server
/// grant less than asked, and says so in the answer); `tools` when none is asked or known.
fn granted_scopes(scope: Option<&str>) -> Vec<String> {
    let mut scopes: Vec<String> = scope
        .unwrap_or_default()
        .split(' ')
        .filter(|s| SCOPES.iter().any(|(known, _)| known == s))
        .map(str::to_string)
        .collect();
    scopes.sort();
    scopes.dedup();
    if scopes.is_empty() {
        scopes.push(SCOPES[0].0.to_string());
    }
    scopes
}

impl AuthServer {
    /// Checks an authorization request and keeps it until its person consents; the id of the
    /// kept request (the consent page's).
    #[tracing::instrument(skip_all, fields(client = params.client_id.as_deref()))]
    pub async fn begin(&self, issuer: &str, params: AuthorizeParams) -> Result<Uuid, AuthorizeError> {
        let inner = &self.inner;
        let client_id = params
            .client_id
            .as_deref()
            .ok_or_else(|| AuthorizeError::Show("the request names no client (client_id)".into()))?;
        let client = inner.clients.resolve(&inner.pool, client_id).await.map_err(|err| match err {
            OAuthError::Refused { description, .. } => AuthorizeError::Show(description),
            OAuthError::Failed(err) => AuthorizeError::Failed(err),
        })?;
        let redirect_uri = match params.redirect_uri.as_deref() {
            Some(uri) if clients::redirect_allowed(&client.redirect_uris, uri) => uri.to_string(),
            Some(uri) => {
                return Err(AuthorizeError::Show(format!(
                    "`{uri}` is not a redirect URI registered by {}; the request is refused and nothing was sent there",
                    client.name
                )));
            }
            None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
            None => return Err(AuthorizeError::Show("the request names no redirect_uri".into())),
        };
        let refuse = |code: &'static str, description: String| AuthorizeError::Redirect {
            redirect_uri: redirect_uri.clone(),
            state: params.state.clone(),
            issuer: issuer.to_string(),
            code,
            description,
        };
        if params.response_type.as_deref() != Some("code") {
            return Err(refuse("unsupported_response_type", "only response_type=code is supported".into()));
        }
        let challenge = match (params.code_challenge.as_deref(), params.code_challenge_method.as_deref()) {
            (Some(challenge), Some("S256"))
                if challenge.len() == 43
                    && challenge.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
            {
                challenge.to_string()
            }
            (Some(_), Some("S256")) => {
                return Err(refuse(
                    "invalid_request",
                    "code_challenge is not an S256 challenge (43 characters of base64url)".into(),
                ));
            }
            _ => {
                return Err(refuse(
                    "invalid_request",
                    "PKCE is required: code_challenge with code_challenge_method=S256".into(),
                ));
            }
        };
        let resource = params.resource.as_deref().ok_or_else(|| {
            refuse(
                "invalid_request",
                format!(
                    "resource is required (RFC 8707): the endpoint, such as {issuer}{MCP_PREFIX}<tenant>"
                ),
            )
        })?;
        let audience = Audience::parse(resource, issuer).ok_or_else(|| {
            refuse("invalid_target", format!("`{resource}` is not an endpoint of this server"))
        })?;
        // Whether the tenant exists and takes OAuth is told only to a person signed in (on the
        // consent page), never to whoever sends this request.
        let tenant = match &audience {
            Audience::Rest => None,
            Audience::Mcp(slug) => Some(slug.to_string()),
        };
        let request = store::Request {
            id: Uuid::new_v4(),
            client_id: client.id.clone(),
            redirect_uri,
            state: params.state.clone(),
            code_challenge: challenge,
            resource: audience.resource(issuer),
            tenant,
            scopes: granted_scopes(params.scope.as_deref()),
            expires_at: OffsetDateTime::now_utc() + REQUEST_TTL,
        };
        store::insert_request(&inner.pool, &request).await?;
        Ok(request.id)
    }

    /// The request `id` as the consent page shows it to `account`.
    pub async fn pending(&self, id: Uuid, account: &AdminUser) -> crate::Result<Pending> {
        let pool = &self.inner.pool;
        let request = store::request(pool, id).await?.ok_or_else(expired_request)?;
        let client = store::client(pool, &request.client_id).await?.ok_or_else(expired_request)?;
        let tenant = request.tenant.as_deref().map(TenantSlug::parse).transpose()?;
        let choices = self.tenants_for(account).await?;
        let allowed = match &tenant {
            Some(slug) => choices.iter().any(|c| c == slug.as_str()),
            None => !choices.is_empty(),
        };
        let redirect = reqwest::Url::parse(&request.redirect_uri).ok();
        let redirect_host = redirect
            .as_ref()
            .map(|url| url.host_str().map(str::to_string).unwrap_or_else(|| url.scheme().to_string()))
            .unwrap_or_default();
        let client_host =
            reqwest::Url::parse(&client.id).ok().and_then(|url| url.host_str().map(str::to_string));
        Ok(Pending {
            client_host,
            redirect_is_local: redirect.as_ref().is_some_and(clients::is_loopback_url),
            redirect_host,
            tenant,
            choices,
            scopes: SCOPES.iter().copied().filter(|(s, _)| request.scopes.iter().any(|r| r == s)).collect(),
            resource: request.resource,
            allowed,
            client,
        })
    }

    /// The tenants `account` may authorize clients for (enabled ones accepting OAuth).
    pub async fn tenants_for(&self, account: &AdminUser) -> crate::Result<Vec<String>> {
        let snapshot = self.inner.catalog.snapshot();
        let oauth =
            |slug: &str| snapshot.tenant(slug).is_some_and(|view| view.access.oauth && view.access.enabled);
        let mut slugs = match account.role {
            crate::admin::Role::Owner => snapshot.tenants().map(|view| view.slug.clone()).collect(),
            _ => stores::admins::tenant_slugs(&self.inner.pool, account.id).await?,
        };
        slugs.retain(|slug| oauth(slug));
        slugs.sort();
        Ok(slugs)
    }

    /// The id of tenant `slug`, if it exists.
    fn tenant_id(&self, slug: &str) -> Option<Uuid> {
        self.inner.catalog.snapshot().tenant(slug).map(|view| view.tenant_id)
    }

    /// When `account` has allowed this client this tenant's endpoint with these scopes before
    /// (and not revoked it), answers the request as approved: the URL to send the browser to.
    pub async fn remembered(&self, id: Uuid, account: &AdminUser) -> crate::Result<Option<String>> {
        let pool = &self.inner.pool;
        let Some(request) = store::request(pool, id).await? else { return Ok(None) };
        let Some(tenant_id) = request.tenant.as_deref().and_then(|slug| self.tenant_id(slug)) else {
            return Ok(None);
        };
        let grant =
            store::active_grant(pool, account.id, &request.client_id, tenant_id, &request.resource).await?;
        match grant {
            Some(grant) if request.scopes.iter().all(|s| grant.scopes.contains(s)) => {
                self.decide(id, account, true, None).await.map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Answers the request `id` as `account` decided: the URL (the client's redirect URI with a
    /// code, or with `access_denied`) to send the browser to. `tenant` is the pick for the
    /// REST API.
    #[tracing::instrument(skip_all, err, fields(%id, username = account.username))]
    pub async fn decide(
        &self,
        id: Uuid,
        account: &AdminUser,
        approve: bool,
        tenant: Option<&str>,
    ) -> crate::Result<String> {
        // Read before the transaction: it must not wait for a second connection.
        let choices = self.tenants_for(account).await?;
        let mut tx = self.inner.pool.begin().await?;
        let request = store::take_request(&mut *tx, id).await?.ok_or_else(expired_request)?;
        let issuer = Audience::issuer_of(&request.resource).to_string();
        let back = |pairs: &[(&str, &str)]| {
            let state = [("state", request.state.as_deref().unwrap_or("")), ("iss", issuer.as_str())];
            with_query(&request.redirect_uri, &[pairs, &state].concat())
        };
        if !approve {
            tx.commit().await?;
            return Ok(back(&[("error", "access_denied"), ("error_description", "the person declined")]));
        }
        let slug = request
            .tenant
            .as_deref()
            .or(tenant)
            .ok_or_else(|| crate::Error::Invalid("choose the tenant this app may use".into()))?;
        // A tenant that does not exist, or takes no OAuth, is one the person may not choose.
        let tenant_id = match self.tenant_id(slug) {
            Some(id) if choices.iter().any(|c| c == slug) => id,
            _ => {
                return Err(crate::Error::Forbidden(format!(
                    "your account may not authorize apps for tenant `{slug}`; ask one of its administrators to add you"
                )));
            }
        };
        let grant = store::put_grant(
            &mut *tx,
            account.id,
            &request.client_id,
            tenant_id,
            &request.resource,
            &request.scopes,
        )
        .await?;
        let code = random_secret("");
        let expires = OffsetDateTime::now_utc() + CODE_TTL;
        store::insert_code(
            &mut *tx,
            &hash(&code),
            grant,
            &request.redirect_uri,
            &request.code_challenge,
            expires,
        )
        .await?;
        let what = serde_json::json!({
            "client_id": request.client_id, "tenant": slug, "resource": request.resource, "scopes": request.scopes,
        });
        stores::record(
            &mut *tx,
            &Actor::admin(&account.username),
            &Change::new("authorize", "oauth_grant", grant).after(&what),
        )
        .await?;
        tx.commit().await?;
        Ok(back(&[("code", &code)]))
    }
}

fn expired_request() -> crate::Error {
    crate::Error::Invalid(
        "this sign-in request has expired or was answered already; start again from your app".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_scopes_are_left_out() {
        assert_eq!(granted_scopes(None), ["tools"]);
        assert_eq!(granted_scopes(Some("openid tools offline_access")), ["tools"]);
        assert_eq!(granted_scopes(Some("openid")), ["tools"]);
    }

    #[test]
    fn errors_go_back_with_state_and_issuer() {
        let err = AuthorizeError::Redirect {
            redirect_uri: "http://127.0.0.1:9/cb?x=1".into(),
            state: Some("s 1".into()),
            issuer: "http://h".into(),
            code: "invalid_request",
            description: "PKCE".into(),
        };
        assert_eq!(
            err.location().unwrap(),
            "http://127.0.0.1:9/cb?x=1&error=invalid_request&error_description=PKCE&state=s+1&iss=http%3A%2F%2Fh"
        );
    }
}
