//! The limits administrators set on calls, and the refusal a call gets when one is reached
//! (`exec::limits` counts the calls against them).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Limits on one subject's calls; each left out is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallLimits {
    /// Calls per UTC minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_minute: Option<NonZeroU32>,
    /// Calls per UTC day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day: Option<NonZeroU32>,
    /// Calls running at once (on each replica).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<NonZeroU32>,
}

impl CallLimits {
    pub fn is_none(&self) -> bool {
        *self == CallLimits::default()
    }

    /// The rate limits set, with their windows.
    pub(crate) fn rates(&self) -> impl Iterator<Item = (Span, u32)> {
        [(Span::Minute, self.per_minute), (Span::Day, self.per_day)]
            .into_iter()
            .filter_map(|(span, max)| Some((span, max?.get())))
    }
}

/// Every limit of one tenant's calls, as the catalog snapshot carries them.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    pub tenant: CallLimits,
    /// By tool id: the tool's default exposed name (what its counter is named by) and limits.
    pub tools: HashMap<Uuid, (String, CallLimits)>,
    /// By API key id.
    pub keys: HashMap<Uuid, CallLimits>,
    /// Of each person's calls (through every client they authorized).
    pub user: CallLimits,
}

/// Whose limit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "scope", content = "tool")]
pub enum Scope {
    Tenant,
    Key,
    /// The calling person (each has the tenant's per-user limits).
    User,
    /// One tool of the tenant, by default exposed name.
    Tool(String),
}

impl Scope {
    /// The metrics label.
    pub fn label(&self) -> &'static str {
        match self {
            Scope::Tenant => "tenant",
            Scope::Key => "key",
            Scope::User => "user",
            Scope::Tool(_) => "tool",
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::Tenant => f.write_str("this tenant"),
            Scope::Key => f.write_str("this API key"),
            Scope::User => f.write_str("each person"),
            Scope::Tool(name) => write!(f, "tool `{name}`"),
        }
    }
}

/// Which kind of limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    PerMinute,
    PerDay,
    Concurrent,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::PerMinute => "per_minute",
            Kind::PerDay => "per_day",
            Kind::Concurrent => "concurrent",
        }
    }
}

/// A call refused by a limit: which, whose, and when a retry may pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{}", self.message())]
pub struct Limited {
    pub limit: Kind,
    #[serde(flatten)]
    pub scope: Scope,
    pub max: u32,
    #[serde(rename = "retry_after_seconds", serialize_with = "seconds")]
    pub retry_after: Duration,
}

fn seconds<S: serde::Serializer>(after: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(after.as_secs())
}

impl Limited {
    fn message(&self) -> String {
        let Limited { limit, scope, max, retry_after } = self;
        let retry = retry_after.as_secs();
        match limit {
            Kind::Concurrent => {
                format!(
                    "too many calls are running for {scope} (at most {max} at once); try again in {retry} s"
                )
            }
            Kind::PerMinute => {
                format!("the limit of {max} calls per minute for {scope} is reached; try again in {retry} s")
            }
            Kind::PerDay => {
                format!("the limit of {max} calls per day for {scope} is reached; try again in {retry} s")
            }
        }
    }
}

/// A rate limit's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Span {
    Minute,
    Day,
}

impl Span {
    pub(crate) fn seconds(self) -> u64 {
        match self {
            Span::Minute => 60,
            Span::Day => 24 * 3600,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Span::Minute => "minute",
            Span::Day => "day",
        }
    }

    pub(crate) fn kind(self) -> Kind {
        match self {
            Span::Minute => Kind::PerMinute,
            Span::Day => Kind::PerDay,
        }
    }

    /// The start of the window `now` is in, in seconds since the epoch.
    pub(crate) fn window(self, now: u64) -> u64 {
        now - now % self.seconds()
    }
}
