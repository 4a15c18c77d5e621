//! The invocation records lost (dropped past the buffer's bounds, or refused by PostgreSQL):
//! counted in [`RECORDS_DROPPED`], and kept as runs per tenant until they are summed in the
//! database; and how many records wait to be written.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use metrics::{Counter, Gauge};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{RECORDS_DROPPED, RECORDS_UNWRITTEN, Record};
use crate::store::invocations::LossReason;

/// Records lost and not yet summed in the database, and how many wait to be written; shared by
/// the recorder and its writer.
pub(super) struct Losses {
    runs: Mutex<HashMap<(Uuid, LossReason), Run>>,
    overflow: Counter,
    refused: Counter,
    pub(super) unwritten: AtomicUsize,
    unwritten_gauge: Gauge,
}

/// A run of lost records of one tenant, for one reason.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    pub(super) count: i64,
    pub(super) first: OffsetDateTime,
    pub(super) last: OffsetDateTime,
}

impl Run {
    fn merge(&mut self, other: Run) {
        self.count += other.count;
        self.first = self.first.min(other.first);
        self.last = self.last.max(other.last);
    }
}

impl Losses {
    pub(super) fn new() -> Self {
        Losses {
            runs: Mutex::default(),
            overflow: metrics::counter!(RECORDS_DROPPED, "reason" => LossReason::Overflow.as_str()),
            refused: metrics::counter!(RECORDS_DROPPED, "reason" => LossReason::Refused.as_str()),
            unwritten: AtomicUsize::new(0),
            unwritten_gauge: metrics::gauge!(RECORDS_UNWRITTEN),
        }
    }

    pub(super) fn lose(&self, record: &Record, reason: LossReason) {
        match reason {
            LossReason::Overflow => self.overflow.increment(1),
            LossReason::Refused => self.refused.increment(1),
        }
        let lost = Run { count: 1, first: record.at, last: record.at };
        let mut runs = self.runs.lock().expect("no panic while counting");
        runs.entry((record.tenant_id, reason)).and_modify(|run| run.merge(lost)).or_insert(lost);
    }

    pub(super) fn take(&self) -> HashMap<(Uuid, LossReason), Run> {
        std::mem::take(&mut *self.runs.lock().expect("no panic while counting"))
    }

    /// Puts back runs that could not be written, merged with those lost since.
    pub(super) fn put_back(&self, taken: HashMap<(Uuid, LossReason), Run>) {
        let mut runs = self.runs.lock().expect("no panic while counting");
        for (key, run) in taken {
            runs.entry(key).and_modify(|now| now.merge(run)).or_insert(run);
        }
    }

    pub(super) fn set_unwritten(&self, count: usize) {
        self.unwritten.store(count, Ordering::Relaxed);
        self.unwritten_gauge.set(count as f64);
    }
}
