//! The metric handles a recorder counts calls with, registered on each tenant's first call of
//! each tool.

use std::collections::HashMap;

use metrics::{Counter, Histogram};

use super::{CALL_SECONDS, CALLS_TOTAL};

/// One tool's metrics in one tenant.
pub(super) struct Meters {
    pub(super) seconds: Histogram,
    /// A counter per status seen, a handful at most.
    calls: Vec<(&'static str, Counter)>,
}

impl Meters {
    pub(super) fn register(tenant: &str, tool: &str) -> Self {
        let labels = [("tenant", tenant.to_string()), ("tool", tool.to_string())];
        Meters { seconds: metrics::histogram!(CALL_SECONDS, &labels), calls: Vec::new() }
    }

    pub(super) fn calls(&mut self, tenant: &str, tool: &str, status: &'static str) -> &Counter {
        let at = match self.calls.iter().position(|(seen, _)| *seen == status) {
            Some(at) => at,
            None => {
                let labels = [
                    ("tenant", tenant.to_string()),
                    ("tool", tool.to_string()),
                    ("status", status.to_string()),
                ];
                self.calls.push((status, metrics::counter!(CALLS_TOTAL, &labels)));
                self.calls.len() - 1
            }
        };
        &self.calls[at].1
    }
}

/// `map`'s value at `key`, made by `new` if it has none; the key is copied only then.
pub(super) fn entry<'m, V>(map: &'m mut HashMap<String, V>, key: &str, new: impl FnOnce() -> V) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_string(), new());
    }
    map.get_mut(key).expect("inserted above")
}
