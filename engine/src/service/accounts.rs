//! Every account, for owners (a tenant's page manages its members): list, create with a
//! one-time password, reset to one, change its role or its tenants, disable or enable, delete. The rules are
//! [`crate::admin`]'s; here they are reached only with an [`Owner`].

use super::{Owner, Services};
use crate::Result;
use crate::admin::{self, AccountRow, Password, Role, Username};

pub async fn list(services: &Services, _: &Owner) -> Result<Vec<AccountRow>> {
    admin::accounts(&services.pool).await
}

/// Creates the account and returns its one-time password.
pub async fn create(
    services: &Services,
    owner: &Owner,
    username: &Username,
    role: Role,
    tenants: &[String],
) -> Result<Password> {
    let password = Password::generate();
    admin::create_account(&services.pool, owner.actor(), username, role, tenants, &password).await?;
    Ok(password)
}

pub async fn reset_password(services: &Services, owner: &Owner, username: &Username) -> Result<Password> {
    admin::reset_password(&services.pool, owner.actor(), username).await
}

pub async fn set_disabled(
    services: &Services,
    owner: &Owner,
    username: &Username,
    disabled: bool,
) -> Result<()> {
    admin::set_disabled(&services.pool, owner.actor(), username, disabled).await?;
    services.oauth.revoked();
    Ok(())
}

pub async fn set_role(services: &Services, owner: &Owner, username: &Username, role: Role) -> Result<()> {
    admin::set_role(&services.pool, owner.actor(), username, role).await?;
    services.oauth.revoked();
    Ok(())
}

pub async fn set_tenants(
    services: &Services,
    owner: &Owner,
    username: &Username,
    tenants: &[String],
) -> Result<()> {
    admin::set_tenants(&services.pool, owner.actor(), username, tenants).await?;
    services.oauth.revoked();
    Ok(())
}

pub async fn delete(services: &Services, owner: &Owner, username: &Username) -> Result<()> {
    admin::delete(&services.pool, owner.actor(), username).await?;
    services.oauth.revoked();
    Ok(())
}
