//! Which tools a tenant's LLM may see, exactly as the seeds define it:
//! - the global switch (`tools_enabled`, forced off by `TOOLGATE_TOOLS_ENABLED=false`);
//! - the tool's source is enabled;
//! - tag whitelist: an empty list admits every tool, a tool with no tag is always admitted, a
//!   tool with several tags is admitted when any of them is listed;
//! - groups: a tool in no group is unaffected, a tool in groups is admitted when at least one
//!   of them is active for the tenant (group default, overridable per tenant);
//! - a tenant's override can hide the tool;
//! - a tool held back by pinning (its upstream definition changed and awaits approval, or it
//!   is new and unreviewed) is not served;
//! - the owner's ceiling for the tenant: a tool from a source outside it, or whose tags it
//!   does not admit, is never visible, and a group outside it is never active — whatever the
//!   tenant's own choices. The tenant's own servers are always within.

/// Everything the decision depends on, for one tenant and one tool.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub tools_enabled: bool,
    pub source_enabled: bool,
    /// The tenant's enabled tags (its own, or the configured default).
    pub whitelist: &'a [String],
    /// The tool's tags: its source's and its own.
    pub tags: &'a [String],
    /// For each group the tool belongs to, whether that group is active for the tenant.
    pub groups_active: &'a [bool],
    /// The tenant's override, if it has one, says whether the tool is enabled.
    pub override_enabled: Option<bool>,
    pub held: bool,
}

pub fn admitted_by_tags(whitelist: &[String], tags: &[String]) -> bool {
    whitelist.is_empty() || tags.is_empty() || tags.iter().any(|tag| whitelist.iter().any(|w| w == tag))
}

pub fn admitted_by_groups(groups_active: &[bool]) -> bool {
    groups_active.is_empty() || groups_active.iter().any(|&active| active)
}

pub fn is_visible(facts: &Facts<'_>) -> bool {
    facts.tools_enabled
        && facts.source_enabled
        && admitted_by_tags(facts.whitelist, facts.tags)
        && admitted_by_groups(facts.groups_active)
        && facts.override_enabled.unwrap_or(true)
        && !facts.held
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// One row: a situation and whether the tool is visible in it.
    struct Case {
        name: &'static str,
        tools_enabled: bool,
        source_enabled: bool,
        whitelist: &'static [&'static str],
        tags: &'static [&'static str],
        groups_active: &'static [bool],
        override_enabled: Option<bool>,
        held: bool,
        visible: bool,
    }

    const BASE: Case = Case {
        name: "",
        tools_enabled: true,
        source_enabled: true,
        whitelist: &[],
        tags: &[],
        groups_active: &[],
        override_enabled: None,
        held: false,
        visible: true,
    };

    #[test]
    fn visibility_rules_and_their_combinations() {
        let cases = [
            Case { name: "empty whitelist admits a tagged tool", tags: &["alfresco"], ..BASE },
            Case { name: "empty whitelist admits an untagged tool", ..BASE },
            Case { name: "untagged tool passes a non-empty whitelist", whitelist: &["files"], ..BASE },
            Case { name: "listed tag admits", whitelist: &["files"], tags: &["files"], ..BASE },
            Case {
                name: "unlisted tag hides",
                whitelist: &["files"],
                tags: &["alfresco"],
                visible: false,
                ..BASE
            },
            Case {
                name: "multi-tag partial match admits",
                whitelist: &["flowerdocs", "files"],
                tags: &["alfresco", "files"],
                ..BASE
            },
            Case {
                name: "multi-tag no match hides",
                whitelist: &["flowerdocs"],
                tags: &["alfresco", "files"],
                visible: false,
                ..BASE
            },
            Case { name: "global switch off hides everything", tools_enabled: false, visible: false, ..BASE },
            Case {
                name: "global switch off beats an admitting tag",
                tools_enabled: false,
                whitelist: &["files"],
                tags: &["files"],
                visible: false,
                ..BASE
            },
            Case {
                name: "disabled source hides an otherwise admitted tool",
                source_enabled: false,
                whitelist: &["files"],
                tags: &["files"],
                visible: false,
                ..BASE
            },
            Case { name: "ungrouped tool is unaffected by groups", groups_active: &[], ..BASE },
            Case { name: "tool in an active group is visible", groups_active: &[true], ..BASE },
            Case {
                name: "tool in an inactive group is hidden",
                groups_active: &[false],
                visible: false,
                ..BASE
            },
            Case {
                name: "tool in two groups, one inactive, is visible",
                groups_active: &[false, true],
                ..BASE
            },
            Case {
                name: "tool in two inactive groups is hidden",
                groups_active: &[false, false],
                visible: false,
                ..BASE
            },
            Case {
                name: "active group does not beat the tag rule",
                whitelist: &["files"],
                tags: &["shell"],
                groups_active: &[true],
                visible: false,
                ..BASE
            },
            Case { name: "override can hide", override_enabled: Some(false), visible: false, ..BASE },
            Case { name: "override enabled keeps it visible", override_enabled: Some(true), ..BASE },
            Case {
                name: "override enabled does not beat a disabled source",
                source_enabled: false,
                override_enabled: Some(true),
                visible: false,
                ..BASE
            },
            Case {
                name: "override enabled does not beat an inactive group",
                groups_active: &[false],
                override_enabled: Some(true),
                visible: false,
                ..BASE
            },
            Case { name: "a held tool is not served", held: true, visible: false, ..BASE },
            Case {
                name: "an override does not release a held tool",
                held: true,
                override_enabled: Some(true),
                visible: false,
                ..BASE
            },
        ];
        for case in cases {
            let (whitelist, tool_tags) = (tags(case.whitelist), tags(case.tags));
            let facts = Facts {
                tools_enabled: case.tools_enabled,
                source_enabled: case.source_enabled,
                whitelist: &whitelist,
                tags: &tool_tags,
                groups_active: case.groups_active,
                override_enabled: case.override_enabled,
                held: case.held,
            };
            assert_eq!(is_visible(&facts), case.visible, "{}", case.name);
        }
    }
}
