//! How people sign in: local passwords, the OpenID provider and its rules (owners set them),
//! and what the sign-in pages offer (anyone may ask).

pub use crate::store::sso::{ClaimRule, SsoAuthMethod, SsoConfig};

use super::{Owner, Services};
use crate::Result;
use crate::sso::{self, SignInConfig, SignInOptions};

pub async fn config(services: &Services, _: &Owner) -> Result<SignInConfig> {
    let mut db = services.pool.acquire().await?;
    sso::current(&mut db).await
}

pub async fn update(services: &Services, owner: &Owner, config: &SignInConfig) -> Result<SignInConfig> {
    sso::update(&services.pool, &services.secrets, owner.actor(), config).await
}

pub async fn options(services: &Services) -> Result<SignInOptions> {
    sso::options(&services.pool).await
}
