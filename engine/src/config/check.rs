//! The rules a document must keep as a whole: unique names, references between its parts,
//! and the stdio programs the process allows.

use std::collections::BTreeSet;

use super::{Document, at, items};
use crate::model::{Name, Tag, TenantSlug};
use crate::store::tenants::check_pinned;
use crate::store::{Error, Result};

fn unique<'a>(section: &str, names: impl Iterator<Item = &'a str>) -> Result<()> {
    let mut seen = BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(Error::Invalid(format!("{section}: `{name}` appears more than once")));
        }
    }
    Ok(())
}

impl Document {
    /// Refuses a document with a stdio server whose program `allowed`
    /// (`TOOLGATE_STDIO_COMMANDS`) does not list: every server it declares, changed or not.
    pub fn check_stdio_commands(&self, allowed: &[String]) -> Result<()> {
        for server in &self.servers {
            crate::upstream::check_server_command(allowed, server)
                .map_err(at(format!("servers.{}", server.name)))?;
        }
        Ok(())
    }

    /// The rules that need the whole document: unique names, and references between parts.
    pub(super) fn check(&self) -> Result<()> {
        unique("servers", self.servers.iter().map(|s| s.name.as_str()))?;
        unique("groups", self.groups.iter().map(|g| g.name.as_str()))?;
        unique("tenants", self.tenants.iter().map(|t| t.slug.as_str()))?;
        let slugs: BTreeSet<&TenantSlug> = self.tenants.iter().map(|t| &t.slug).collect();
        for server in &self.servers {
            server.check().map_err(at(format!("servers.{}", server.name)))?;
            if let Some(tenant) = &server.tenant
                && !slugs.contains(tenant)
            {
                return Err(Error::Invalid(format!(
                    "servers.{}: tenant `{tenant}` is not among the document's tenants",
                    server.name
                )));
            }
        }
        let group_names: BTreeSet<&Name> = self.groups.iter().map(|g| &g.name).collect();
        for tenant in &self.tenants {
            if !(1..=200).contains(&tenant.name().chars().count()) {
                return Err(Error::Invalid(format!(
                    "tenants.{}: a name is 1 to 200 characters",
                    tenant.slug
                )));
            }
            if let Some(group) = tenant.groups.keys().find(|g| !group_names.contains(g)) {
                return Err(Error::Invalid(format!(
                    "tenants.{}.groups: group `{group}` is not among the document's groups",
                    tenant.slug
                )));
            }
            let ceiling = &tenant.ceiling;
            let refusal = tenant
                .enabled_tags
                .as_ref()
                .and_then(|tags| ceiling.refuses_tags(tags.iter().map(Tag::as_str)));
            let refusal = refusal.or_else(|| {
                tenant
                    .groups
                    .iter()
                    .filter(|(_, active)| **active)
                    .find_map(|(g, _)| ceiling.refuses_group(g.as_str()))
            });
            if let Some(refusal) = refusal {
                return Err(Error::Invalid(format!("tenants.{}: {refusal}", tenant.slug)));
            }
            check_pinned(&tenant.pinned_tools)
                .map_err(at(format!("tenants.{}.pinned_tools", tenant.slug)))?;
        }
        items::check(self)
    }
}
