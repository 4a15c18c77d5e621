//! A server refusing a connection's token even refreshed, or wanting a scope it lacks: the
//! authorization is marked as needing to be given again (with the scopes the server wants).

use rmcp::transport::auth::{StoredCredentials, WWWAuthenticateParams};
use sqlx::PgPool;
use uuid::Uuid;

use crate::secret::SecretBox;
use crate::store::{self, authorizations};

/// Marks authorization `id` of the server at `url` as needing to be given again, the server
/// having refused its token with `challenge` (a 401 even after a refresh, or a 403). For want
/// of scope, every later authorization asks for the scopes granted and the one the server
/// wants (SEP-2350). Why, as the server's page says it.
pub(in crate::upstream) async fn refused(
    pool: &PgPool,
    secrets: &SecretBox,
    url: &str,
    id: Uuid,
    challenge: &str,
) -> String {
    let params =
        url::Url::parse(url).map(|base| WWWAuthenticateParams::parse(challenge, &base)).unwrap_or_default();
    let insufficient = params.is_insufficient_scope();
    let (reason, marked) = match params.scope.filter(|_| insufficient) {
        Some(scope) => {
            let reason =
                format!("the server wants the scope `{scope}`, which its token lacks: authorize it again");
            let marked = match granted_and(pool, secrets, id, &scope).await {
                Ok(wanted) => authorizations::wants_scopes(pool, id, &reason, &wanted).await,
                Err(err) => Err(err),
            };
            (reason, marked)
        }
        None => {
            let reason = format!("the server refused its token, even refreshed ({challenge})");
            let marked = authorizations::lost(pool, id, &reason).await;
            (reason, marked)
        }
    };
    tracing::warn!(authorization = %id, %reason, "an upstream server refused its token");
    if let Err(err) = marked {
        tracing::warn!(authorization = %id, error = %err, "the authorization could not be marked");
    }
    reason
}

/// The scopes authorization `id` was granted, and those of `scope` (space-separated).
async fn granted_and(
    pool: &PgPool,
    secrets: &SecretBox,
    id: Uuid,
    scope: &str,
) -> store::Result<Vec<String>> {
    let stored = authorizations::credentials(pool, secrets, id).await?;
    let granted = stored.and_then(|json| serde_json::from_str::<StoredCredentials>(&json).ok());
    let mut scopes = granted.map(|credentials| credentials.granted_scopes).unwrap_or_default();
    scopes.extend(scope.split_whitespace().map(str::to_string));
    scopes.sort();
    scopes.dedup();
    Ok(scopes)
}
