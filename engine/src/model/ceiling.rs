//! The owner's ceiling on what a tenant may use (the catalog applies it to what the tenant
//! sees, the store to what its administrators may choose).

use serde::{Deserialize, Serialize};

/// The source name of the built-in shell tools, which a ceiling admits or not on its own.
pub const SHELL: &str = "shell";

/// The owner's limit on what a tenant may use; each `None` is no limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ceiling {
    /// Tags the tenant may enable: a tagged tool needs one of them (an untagged tool always
    /// passes, as with the whitelist); `[]` admits no tagged tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Shared servers, built-in providers and external tool sets, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<String>>,
    /// Groups that may be active for the tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    /// Whether the built-in `shell` tools are within, whatever `sources` says; left out = yes.
    /// A tenant made in the panel or the admin API starts without them.
    #[serde(default = "crate::model::yes", skip_serializing_if = "crate::model::is_true")]
    pub shell: bool,
}

/// No limit.
impl Default for Ceiling {
    fn default() -> Self {
        Ceiling { tags: None, sources: None, groups: None, shell: true }
    }
}

fn listed(list: &Option<Vec<String>>, name: &str) -> bool {
    list.as_ref().is_none_or(|list| list.iter().any(|item| item == name))
}

impl Ceiling {
    pub fn is_open(&self) -> bool {
        self.tags.is_none() && self.sources.is_none() && self.groups.is_none() && self.shell
    }

    /// Whether a tool of `source` (not the tenant's own) with `tags` is within.
    pub fn admits_tool(&self, source: &str, tags: &[String]) -> bool {
        listed(&self.sources, source)
            && (self.shell || source != SHELL)
            && self
                .tags
                .as_ref()
                .is_none_or(|allowed| tags.is_empty() || tags.iter().any(|t| allowed.contains(t)))
    }

    pub fn admits_group(&self, group: &str) -> bool {
        listed(&self.groups, group)
    }

    /// Why enabling `tags` goes beyond the ceiling, if it does.
    pub fn refuses_tags<'t>(&self, tags: impl IntoIterator<Item = &'t str>) -> Option<String> {
        let allowed = self.tags.as_ref()?;
        let beyond: Vec<&str> = tags.into_iter().filter(|tag| !allowed.iter().any(|a| a == tag)).collect();
        (!beyond.is_empty()).then(|| {
            format!(
                "tag(s) {} are beyond what the owner allows this tenant ({})",
                beyond.join(", "),
                if allowed.is_empty() { "no tags".to_string() } else { allowed.join(", ") }
            )
        })
    }

    /// Why activating `group` goes beyond the ceiling, if it does.
    pub fn refuses_group(&self, group: &str) -> Option<String> {
        (!self.admits_group(group))
            .then(|| format!("group `{group}` is beyond what the owner allows this tenant"))
    }
}
