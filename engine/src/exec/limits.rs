//! Call limits set by administrators: calls per minute, per day and at once, for a tenant, one
//! tool of a tenant, an API key, or each person signed in to the tenant (OAuth). A call must pass every limit that applies to it; the one it
//! would exceed refuses it as [`Limited`], named, with when to try again.
//!
//! Rates are counted in fixed windows (the UTC minute, the UTC day). Each replica counts the
//! calls it admits locally and shares them through PostgreSQL every sync interval
//! ([`Quotas::sync`]: one statement for every counter, not a write per call); between syncs it
//! adds its own calls to the other replicas' as last read. So N replicas admit at most what the
//! others admitted within one sync interval beyond a limit (the README works the bound out).
//! Concurrent calls are bounded by each replica on its own (see `admission`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::PgPool;
use uuid::Uuid;

use crate::model::limits::{CallLimits, Limited, Limits, Scope, Span};
use crate::store::usage::{self, Count};

/// Whose own limits a call counts against, besides its tenant's and its tool's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holder {
    Key(Uuid),
    /// A person in one tenant: an id made of the two, so each tenant counts apart.
    User(Uuid),
}

impl Holder {
    pub(crate) fn user(tenant: Uuid, account: Uuid) -> Self {
        Holder::User(Uuid::new_v5(&tenant, account.as_bytes()))
    }

    pub(crate) fn id(self) -> Uuid {
        match self {
            Holder::Key(id) | Holder::User(id) => id,
        }
    }

    pub(crate) fn scope(self) -> Scope {
        match self {
            Holder::Key(_) => Scope::Key,
            Holder::User(_) => Scope::User,
        }
    }

    /// The limits set on this holder's calls.
    pub(crate) fn limits(self, limits: &Limits) -> Option<&CallLimits> {
        match self {
            Holder::Key(key) => limits.keys.get(&key),
            Holder::User(_) => Some(&limits.user),
        }
    }
}

/// Counts a refusal in the process's metrics.
pub(crate) fn count_refusal(limited: &Limited, tenant: &str) {
    let labels = [
        ("tenant", tenant.to_string()),
        ("scope", limited.scope.label().to_string()),
        ("limit", limited.limit.as_str().to_string()),
    ];
    metrics::counter!("toolgate_calls_refused_total", &labels).increment(1);
}

/// What one counter counts: a subject's calls (a tool's: `tool` is its default exposed name;
/// the subject's own: empty) in one kind of window.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Counter {
    pub subject: Uuid,
    pub tool: String,
    pub span: Span,
}

impl Counter {
    /// Its calls in the window starting at `window`.
    fn count(&self, window: u64, calls: u64) -> Count {
        Count { subject: self.subject, tool: self.tool.clone(), span: self.span, window, calls }
    }

    /// The counter a count is of.
    fn of(count: &Count) -> Self {
        Counter { subject: count.subject, tool: count.tool.clone(), span: count.span }
    }
}

/// One counter's current window.
#[derive(Debug)]
struct Usage {
    /// Its start, in seconds since the epoch.
    window: u64,
    /// The other replicas' calls, as of the last sync.
    others: u64,
    /// This replica's calls already added to PostgreSQL.
    synced: u64,
    /// This replica's calls not yet added.
    unsynced: u64,
    /// When a call last was counted (seconds since the epoch): idle counters are dropped.
    used: u64,
}

/// A counter unused this long is dropped; its next use reads its window's total again.
const IDLE: u64 = 10 * 60;

/// One rate limit a call must pass.
struct Check {
    counter: Counter,
    scope: Scope,
    max: u32,
}

/// The rate limits that apply to a call of `tool` by `holder` among `limits` of `tenant`.
fn checks(limits: &Limits, tenant: Uuid, tool: Uuid, holder: Option<Holder>) -> Vec<Check> {
    let tool = limits.tools.get(&tool).map(|(name, limits)| (Scope::Tool(name.clone()), tenant, limits));
    let key = holder.and_then(|holder| Some((holder.scope(), holder.id(), holder.limits(limits)?)));
    [(Scope::Tenant, tenant, &limits.tenant)]
        .into_iter()
        .chain(tool)
        .chain(key)
        .flat_map(|(scope, subject, limits)| {
            let tool = match &scope {
                Scope::Tool(name) => name.clone(),
                _ => String::new(),
            };
            limits.rates().map(move |(span, max)| Check {
                counter: Counter { subject, tool: tool.clone(), span },
                scope: scope.clone(),
                max,
            })
        })
        .collect()
}

fn epoch_seconds(now: SystemTime) -> u64 {
    now.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// This replica's rate counters.
#[derive(Default)]
pub(crate) struct Quotas {
    counters: Mutex<HashMap<Counter, Usage>>,
}

impl Quotas {
    /// Counts a call of `tool` by `holder` against every rate limit of `limits` that applies, or
    /// refuses it with the first limit it would exceed (and counts nothing). A counter this
    /// replica does not know yet is read from PostgreSQL first; if that fails the call is
    /// counted from what this replica knows, and the failure logged.
    pub(crate) async fn admit(
        &self,
        pool: &PgPool,
        limits: &Limits,
        tenant: Uuid,
        tool: Uuid,
        holder: Option<Holder>,
    ) -> Result<(), Limited> {
        let checks = checks(limits, tenant, tool, holder);
        if checks.is_empty() {
            return Ok(());
        }
        let now = epoch_seconds(SystemTime::now());
        let unknown: Vec<Count> = {
            let counters = self.counters.lock().expect("quotas");
            checks
                .iter()
                .filter(|c| !counters.contains_key(&c.counter))
                .map(|c| c.counter.count(c.counter.span.window(now), 0))
                .collect()
        };
        if !unknown.is_empty() {
            match usage::add_and_read(pool, &unknown).await {
                Ok(totals) => self.learn(&totals, now),
                Err(err) => tracing::warn!(error = %err, "call usage could not be read; counting locally"),
            }
        }
        self.count(&checks, now)
    }

    /// Adds what counters read from PostgreSQL say (counters already known keep theirs).
    fn learn(&self, totals: &[Count], now: u64) {
        let mut counters = self.counters.lock().expect("quotas");
        for total in totals {
            let usage =
                Usage { window: total.window, others: total.calls, synced: 0, unsynced: 0, used: now };
            counters.entry(Counter::of(total)).or_insert(usage);
        }
    }

    fn count(&self, checks: &[Check], now: u64) -> Result<(), Limited> {
        let mut counters = self.counters.lock().expect("quotas");
        for check in checks {
            let window = check.counter.span.window(now);
            let usage = counters.entry(check.counter.clone()).or_insert(Usage {
                window,
                others: 0,
                synced: 0,
                unsynced: 0,
                used: now,
            });
            if usage.window != window {
                // A new window: everyone starts again from zero.
                *usage = Usage { window, others: 0, synced: 0, unsynced: 0, used: now };
            }
            if usage.others + usage.synced + usage.unsynced >= u64::from(check.max) {
                let ends = window + check.counter.span.seconds();
                return Err(Limited {
                    limit: check.counter.span.kind(),
                    scope: check.scope.clone(),
                    max: check.max,
                    retry_after: Duration::from_secs((ends - now).max(1)),
                });
            }
        }
        for check in checks {
            let usage = counters.get_mut(&check.counter).expect("every check was entered above");
            usage.unsynced += 1;
            usage.used = now;
        }
        Ok(())
    }

    /// Adds this replica's new calls to PostgreSQL and reads every counter's total, in one
    /// statement; drops counters whose window ended or that went idle with nothing to add.
    pub(crate) async fn sync(&self, pool: &PgPool) -> crate::store::Result<()> {
        let now = epoch_seconds(SystemTime::now());
        let counts: Vec<Count> = {
            let mut counters = self.counters.lock().expect("quotas");
            counters.retain(|counter, usage| {
                usage.unsynced > 0
                    || (usage.window == counter.span.window(now) && now.saturating_sub(usage.used) < IDLE)
            });
            counters.iter().map(|(counter, usage)| counter.count(usage.window, usage.unsynced)).collect()
        };
        if counts.is_empty() {
            return Ok(());
        }
        let totals = usage::add_and_read(pool, &counts).await?;
        let mut counters = self.counters.lock().expect("quotas");
        for (sent, total) in counts.iter().zip(&totals) {
            let Some(usage) = counters.get_mut(&Counter::of(sent)) else { continue };
            if usage.window != sent.window {
                continue;
            }
            usage.unsynced -= sent.calls;
            usage.synced += sent.calls;
            usage.others = total.calls.saturating_sub(usage.synced);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;
    use crate::model::limits::Kind;

    fn limits(per_minute: u32, per_day: u32) -> CallLimits {
        CallLimits {
            per_minute: NonZeroU32::new(per_minute),
            per_day: NonZeroU32::new(per_day),
            concurrent: None,
        }
    }

    #[test]
    fn a_call_counts_against_every_limit_that_applies_and_a_refusal_counts_nothing() {
        let (tenant, tool, key) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let mut all = Limits { tenant: limits(0, 3), ..Limits::default() };
        all.tools.insert(tool, ("weather_get".into(), limits(2, 0)));
        all.keys.insert(key, limits(10, 0));
        let quotas = Quotas::default();
        let now = 1_000_000 * 86_400 + 30;
        let call = |tool| quotas.count(&checks(&all, tenant, tool, Some(Holder::Key(key))), now);
        call(tool).unwrap();
        call(tool).unwrap();
        let refused = call(tool).unwrap_err();
        assert_eq!(refused.scope, Scope::Tool("weather_get".into()));
        assert_eq!((refused.limit, refused.max), (Kind::PerMinute, 2));
        assert_eq!(refused.retry_after, Duration::from_secs(30));
        assert_eq!(
            refused.to_string(),
            "the limit of 2 calls per minute for tool `weather_get` is reached; try again in 30 s"
        );
        // The refused call did not use the tenant's day: one more call of another tool passes.
        call(Uuid::new_v4()).unwrap();
        let refused = call(Uuid::new_v4()).unwrap_err();
        assert_eq!((refused.scope, refused.limit, refused.max), (Scope::Tenant, Kind::PerDay, 3));
        let key_counter = Counter { subject: key, tool: String::new(), span: Span::Minute };
        assert_eq!(quotas.counters.lock().unwrap()[&key_counter].unsynced, 3);
    }

    #[test]
    fn each_person_has_the_tenants_per_user_limit_of_their_own() {
        let (acme, globex, tool) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
        let all = Limits { user: limits(0, 2), ..Limits::default() };
        let quotas = Quotas::default();
        let now = 1_000_000 * 86_400;
        let call = |tenant, account| {
            quotas.count(&checks(&all, tenant, tool, Some(Holder::user(tenant, account))), now)
        };
        call(acme, alice).unwrap();
        call(acme, alice).unwrap();
        let refused = call(acme, alice).unwrap_err();
        assert_eq!((&refused.scope, refused.max), (&Scope::User, 2));
        assert_eq!(
            refused.to_string().split(';').next().unwrap(),
            "the limit of 2 calls per day for each person is reached"
        );
        call(acme, bob).unwrap();
        call(globex, alice).unwrap();
    }

    #[test]
    fn a_new_window_starts_from_zero_and_the_other_replicas_calls_count() {
        let tenant = Uuid::new_v4();
        let all = Limits { tenant: limits(2, 0), ..Limits::default() };
        let quotas = Quotas::default();
        let minute = 60 * 1_000_000;
        let counter = Counter { subject: tenant, tool: String::new(), span: Span::Minute };
        quotas.learn(&[counter.count(minute, 1)], minute);
        let call = |now| quotas.count(&checks(&all, tenant, Uuid::new_v4(), None), now);
        call(minute + 1).unwrap();
        assert_eq!(call(minute + 59).unwrap_err().retry_after, Duration::from_secs(1));
        call(minute + 60).unwrap();
        call(minute + 61).unwrap();
        assert!(call(minute + 62).is_err());
    }
}
