//! What the `toolgate` command line does with the operator's authority: whoever runs it on the
//! machine with the database's address (audited as `cli`).

use sqlx::PgPool;
use uuid::Uuid;

use super::global::NewToken;
use crate::Result;
use crate::model::Actor;
use crate::store::tokens::{self, AdminToken};

/// A new admin token, and the token itself: the only time it is shown.
pub async fn create_token(pool: &PgPool, new: &NewToken) -> Result<(AdminToken, String)> {
    tokens::create(pool, &Actor::cli(), new).await
}

pub async fn tokens(pool: &PgPool) -> Result<Vec<AdminToken>> {
    tokens::list(pool).await
}

pub async fn revoke_token(pool: &PgPool, id: Uuid) -> Result<AdminToken> {
    tokens::revoke(pool, &Actor::cli(), id).await
}
