//! The account a sign-in makes: the claim rules applied to the person (a role and tenants), the
//! account created the first time and updated every time, audited.

use sqlx::PgPool;

use super::{Person, SsoError};
use crate::admin::{AdminUser, Username};
use crate::model::{Role, TenantSlug};
use crate::store::sso::{ClaimRule, SsoConfig};
use crate::store::{self, Actor, Change};
use crate::{Error, Result};

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

pub(super) async fn sign_in(
    pool: &PgPool,
    config: &SsoConfig,
    person: &Person,
) -> Result<AdminUser, SsoError> {
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
    use crate::store::sso::SsoAuthMethod;

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
}
