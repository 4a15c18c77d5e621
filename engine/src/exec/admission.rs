//! Bounds on concurrent executions, per tenant and per API key: one tenant cannot take every
//! worker from the others, nor one key from its tenant. A call waits [`ADMISSION_WAIT`] at
//! most for a place, then is refused as [`Busy`], naming the limit it met.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use crate::tool::Caller;

/// How long a call waits for a place before it is refused.
pub const ADMISSION_WAIT: Duration = Duration::from_secs(2);

/// A call refused because too many of its tenant's or key's calls are running.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "too many calls are running for this {scope} (at most {max} at once); try again in {} s",
    retry_after.as_secs()
)]
pub struct Busy {
    /// `tenant` or `API key`.
    pub scope: &'static str,
    pub max: usize,
    /// When a retry may find a place.
    pub retry_after: Duration,
}

/// The running calls' places.
pub(crate) struct Admission {
    per_tenant: usize,
    per_key: usize,
    tenants: Mutex<HashMap<Uuid, Arc<Semaphore>>>,
    keys: Mutex<HashMap<Uuid, Arc<Semaphore>>>,
}

/// A running call's places; dropping it frees them.
pub(crate) struct Permit {
    _tenant: OwnedSemaphorePermit,
    _key: Option<OwnedSemaphorePermit>,
}

impl Admission {
    pub(crate) fn new(per_tenant: usize, per_key: usize) -> Self {
        Admission { per_tenant, per_key, tenants: Mutex::default(), keys: Mutex::default() }
    }

    /// Places for a call of `tenant` by `caller` (API keys have a bound of their own).
    pub(crate) async fn admit(&self, tenant: Uuid, caller: &Caller) -> Result<Permit, Busy> {
        let tenant = acquire(&self.tenants, tenant, self.per_tenant, "tenant").await?;
        let key = match caller {
            Caller::ApiKey(key) => Some(acquire(&self.keys, *key, self.per_key, "API key").await?),
            _ => None,
        };
        Ok(Permit { _tenant: tenant, _key: key })
    }
}

async fn acquire(
    semaphores: &Mutex<HashMap<Uuid, Arc<Semaphore>>>,
    id: Uuid,
    max: usize,
    scope: &'static str,
) -> Result<OwnedSemaphorePermit, Busy> {
    let semaphore = semaphores
        .lock()
        .expect("admission")
        .entry(id)
        .or_insert_with(|| Arc::new(Semaphore::new(max)))
        .clone();
    // A free place needs no timer: that is the common case, on every call.
    if let Ok(permit) = semaphore.clone().try_acquire_owned() {
        return Ok(permit);
    }
    match tokio::time::timeout(ADMISSION_WAIT, semaphore.acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => {
            metrics::counter!("toolgate_calls_refused_total", "limit" => scope).increment(1);
            Err(Busy { scope, max, retry_after: Duration::from_secs(1) })
        }
    }
}
