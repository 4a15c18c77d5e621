//! Who may do what. An operation on a tenant takes a [`ManagedTenant`], one on the global
//! configuration an [`Owner`]: both are handed out only by [`Admin`] after its check, so an
//! operation cannot be reached without it.

use crate::admin::Scope;
use crate::model::TenantSlug;
use crate::store::Actor;
use crate::tool::Caller;
use crate::{Error, Missing, Result};

/// An administrator as a surface identified them: a panel session, or an admin token (a
/// tenant's token manages that tenant only, like a tenant administrator).
#[derive(Debug, Clone)]
pub struct Admin {
    actor: Actor,
    /// Shown as the caller of test invocations.
    name: String,
    scope: Scope,
}

impl Admin {
    /// An administrator signed in to the panel, managing `scope`.
    pub fn signed_in(username: &str, scope: Scope) -> Self {
        Admin { actor: Actor::admin(username), name: username.to_string(), scope }
    }

    /// The holder of the admin token `name`, managing `scope`.
    pub fn token(name: &str, scope: Scope) -> Self {
        Admin { actor: Actor::token(name), name: format!("token:{name}"), scope }
    }

    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The owner's rights: the global configuration, every tenant, ceilings.
    pub fn owner(&self) -> Result<Owner> {
        match self.scope {
            Scope::Everything => Ok(Owner { actor: self.actor.clone() }),
            Scope::Tenants(_) => Err(Error::Forbidden("only owners may do this".into())),
        }
    }

    /// The tenant `slug`, if this administrator manages it. A tenant outside the scope is
    /// answered as unknown, so its existence is not revealed.
    pub fn tenant(&self, slug: &str) -> Result<ManagedTenant<'_>> {
        let unknown = || Error::NotFound(Missing::Tenant(slug.to_string()));
        let slug = TenantSlug::parse(slug).map_err(|_| unknown())?;
        if !self.scope.allows(slug.as_str()) {
            return Err(unknown());
        }
        Ok(ManagedTenant { admin: self, slug })
    }
}

/// Proof that the caller is an owner.
#[derive(Debug, Clone)]
pub struct Owner {
    actor: Actor,
}

impl Owner {
    pub fn actor(&self) -> &Actor {
        &self.actor
    }
}

/// A tenant, with proof that the caller manages it.
#[derive(Debug, Clone)]
pub struct ManagedTenant<'a> {
    admin: &'a Admin,
    slug: TenantSlug,
}

impl ManagedTenant<'_> {
    pub fn slug(&self) -> &TenantSlug {
        &self.slug
    }

    pub fn actor(&self) -> &Actor {
        &self.admin.actor
    }

    /// The administrator as the caller of a test invocation.
    pub fn caller(&self) -> Caller {
        Caller::Admin(self.admin.name.clone())
    }

    /// Whether the caller manages every tenant of `slugs` too.
    pub fn manages_all(&self, slugs: &[String]) -> bool {
        slugs.iter().all(|slug| self.admin.scope.allows(slug))
    }

    /// The owner's rights over the tenant (its ceiling, deleting it), or why not.
    pub fn owner(&self) -> Result<Owner> {
        self.admin.owner()
    }
}
