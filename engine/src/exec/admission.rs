//! Bounds on concurrent executions, on each replica: the process's own per tenant and per API
//! key (one tenant cannot take every worker from the others, nor one key from its tenant), and
//! the `concurrent` limits administrators set for a tenant, a tool or a key (the smaller bound
//! applies). A call waits [`ADMISSION_WAIT`] at most for a place, then is refused as
//! [`Limited`], naming the limit it met.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use super::limits::Holder;
use crate::model::limits::{CallLimits, Kind, Limited, Limits, Scope};

/// How long a call waits for a place before it is refused.
pub const ADMISSION_WAIT: Duration = Duration::from_secs(2);

/// The running calls' places.
pub(crate) struct Admission {
    per_tenant: usize,
    per_key: usize,
    /// By subject: a tenant, a key, or a tenant and its tool.
    places: Mutex<HashMap<(Uuid, Scope), Places>>,
}

/// One subject's places, and the bound they were made for.
struct Places {
    max: usize,
    semaphore: Arc<Semaphore>,
}

impl Places {
    fn new(max: usize) -> Self {
        Places { max, semaphore: Arc::new(Semaphore::new(max)) }
    }
}

/// A running call's places; dropping it frees them.
pub(crate) struct Permit {
    _places: Vec<OwnedSemaphorePermit>,
}

impl Admission {
    pub(crate) fn new(per_tenant: usize, per_key: usize) -> Self {
        Admission { per_tenant, per_key, places: Mutex::default() }
    }

    /// Places for a call of `tool` by `holder` (a key or a person, if any) of `tenant`, under
    /// `limits`; a person has the process's per-key bound too.
    pub(crate) async fn admit(
        &self,
        limits: &Limits,
        tenant: Uuid,
        tool: Uuid,
        holder: Option<Holder>,
    ) -> Result<Permit, Limited> {
        let bound = |process: Option<usize>, limits: Option<&CallLimits>| {
            let set = limits.and_then(|l| l.concurrent).map(|n| n.get() as usize);
            process.into_iter().chain(set).min()
        };
        let mut bounds = vec![(tenant, Scope::Tenant, bound(Some(self.per_tenant), Some(&limits.tenant)))];
        if let Some((name, tool_limits)) = limits.tools.get(&tool) {
            bounds.push((tenant, Scope::Tool(name.clone()), bound(None, Some(tool_limits))));
        }
        if let Some(holder) = holder {
            bounds.push((holder.id(), holder.scope(), bound(Some(self.per_key), holder.limits(limits))));
        }
        let mut places = Vec::with_capacity(bounds.len());
        for (subject, scope, max) in bounds {
            if let Some(max) = max {
                places.push(self.acquire(subject, scope, max).await?);
            }
        }
        Ok(Permit { _places: places })
    }

    async fn acquire(
        &self,
        subject: Uuid,
        scope: Scope,
        max: usize,
    ) -> Result<OwnedSemaphorePermit, Limited> {
        let semaphore = {
            let mut places = self.places.lock().expect("admission");
            let entry = places.entry((subject, scope.clone())).or_insert_with(|| Places::new(max));
            if entry.max != max {
                // The limit changed: calls holding the old places finish under it.
                *entry = Places::new(max);
            }
            entry.semaphore.clone()
        };
        // A free place needs no timer: that is the common case, on every call.
        if let Ok(permit) = semaphore.clone().try_acquire_owned() {
            return Ok(permit);
        }
        match tokio::time::timeout(ADMISSION_WAIT, semaphore.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(Limited {
                limit: Kind::Concurrent,
                scope,
                max: max as u32,
                retry_after: Duration::from_secs(1),
            }),
        }
    }
}
