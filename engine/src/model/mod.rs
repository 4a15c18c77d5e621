//! Validated names and the small value types every layer shares. A value of these types has
//! passed its rule, so code downstream never re-checks.

pub mod ceiling;
pub mod limits;
pub mod naming;
pub mod upstream;

pub use ceiling::Ceiling;
pub use limits::{CallLimits, Limited};
pub use upstream::UpstreamError;

use serde::{Deserialize, Serialize};

/// A rule a name or value breaks; the message says what the rule is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

fn matches(value: &str, max: usize, allowed: impl Fn(char) -> bool) -> bool {
    (1..=max).contains(&value.len()) && value.chars().all(allowed)
}

macro_rules! validated_name {
    ($(#[$doc:meta])* $name:ident, $max:expr, $allowed:expr, $rule:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn parse(value: &str) -> Result<Self, Invalid> {
                if matches(value, $max, $allowed) {
                    Ok($name(value.to_string()))
                } else {
                    Err(Invalid(format!(concat!("`{}` is not a valid ", $rule), value)))
                }
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let value = String::deserialize(d)?;
                $name::parse(&value).map_err(serde::de::Error::custom)
            }
        }
    };
}

validated_name!(
    /// A tenant's URL name: `^[a-z0-9-]{1,40}$`.
    TenantSlug, 40, |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-',
    "tenant slug (1-40 of a-z, 0-9, -)"
);
validated_name!(
    /// A name of a source or group: `^[A-Za-z0-9_-]{1,64}$`.
    Name, 64, |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-',
    "name (1-64 of A-Z, a-z, 0-9, _, -)"
);
validated_name!(
    /// A tag on a source or tool: `^[A-Za-z0-9_.-]{1,40}$`.
    Tag, 40, |c: char| c.is_ascii_alphanumeric() || "_.-".contains(c),
    "tag (1-40 of A-Z, a-z, 0-9, _, ., -)"
);

/// A source's exposed-name prefix: up to 32 of `[A-Za-z0-9_-]`, possibly empty.
pub fn check_prefix(prefix: &str) -> Result<(), Invalid> {
    if prefix.len() <= 32 && prefix.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        Ok(())
    } else {
        Err(Invalid(format!("`{prefix}` is not a valid prefix (up to 32 of A-Z, a-z, 0-9, _, -)")))
    }
}

pub fn parse_tags(tags: &[String]) -> Result<Vec<Tag>, Invalid> {
    let mut parsed: Vec<Tag> = tags.iter().map(|t| Tag::parse(t)).collect::<Result<_, _>>()?;
    parsed.sort();
    parsed.dedup();
    Ok(parsed)
}

pub fn tag_strings(tags: &[Tag]) -> Vec<String> {
    tags.iter().map(|t| t.as_str().to_string()).collect()
}

/// Where a tool comes from; stored as text (a value the database's check does not know fails
/// the read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum SourceKind {
    /// Rust code compiled into Toolgate.
    Builtin,
    /// An upstream MCP server.
    Mcp,
    /// Schema-only tools that the caller executes (calls are suspended).
    External,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Builtin => "builtin",
            SourceKind::Mcp => "mcp",
            SourceKind::External => "external",
        }
    }
}

/// Who makes a change, as recorded in the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor(String);

impl Actor {
    pub fn admin(username: &str) -> Self {
        Actor(format!("admin:{username}"))
    }
    pub fn token(name: &str) -> Self {
        Actor(format!("token:{name}"))
    }
    /// An OAuth client acting on its own tokens (revoking them).
    pub fn client(id: &str) -> Self {
        Actor(format!("client:{id}"))
    }
    pub fn cli() -> Self {
        Actor("cli".into())
    }
    pub fn system() -> Self {
        Actor("system".into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What an account may do; stored as text (a value the database's check does not know fails
/// the read, never grants another role).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum Role {
    /// Authorizes MCP clients for its tenants; sees only its own connected apps in the panel.
    Member,
    /// Manages the tenants it is assigned to.
    TenantAdmin,
    /// Every tenant and every global setting.
    Owner,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::TenantAdmin => "tenant_admin",
            Role::Member => "member",
        }
    }

    pub fn parse(role: &str) -> Result<Self, Invalid> {
        match role {
            "owner" => Ok(Role::Owner),
            "tenant_admin" => Ok(Role::TenantAdmin),
            "member" => Ok(Role::Member),
            other => Err(Invalid(format!("`{other}` is not a role (owner, tenant_admin or member)"))),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Serde's default for switches that are on unless a document says otherwise.
pub(crate) fn yes() -> bool {
    true
}

/// Such a switch is left out of what is written while it is on.
pub(crate) fn is_true(value: &bool) -> bool {
    *value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert!(TenantSlug::parse("acme-1").is_ok());
        for bad in ["", "Acme", "a_b", &"a".repeat(41)] {
            assert!(TenantSlug::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tags_are_sorted_and_deduplicated() {
        let tags = parse_tags(&["files".into(), "demo".into(), "files".into()]).unwrap();
        assert_eq!(tag_strings(&tags), ["demo", "files"]);
        assert!(parse_tags(&["no spaces".into()]).is_err());
    }

    #[test]
    fn names_deserialize_only_when_valid() {
        assert!(serde_json::from_str::<Name>("\"math\"").is_ok());
        let err = serde_json::from_str::<Name>("\"a b\"").unwrap_err().to_string();
        assert!(err.contains("not a valid name"), "{err}");
    }
}
