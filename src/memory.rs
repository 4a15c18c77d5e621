//! Giving freed memory back to the system after the process's big, short-lived allocations.
//!
//! glibc's allocator keeps what a thread frees in that thread's arena and returns only the top
//! of each heap, so the tens of MiB that a catalog rebuild or the rendering of a large tool
//! list allocate and free stay resident (a 5,000-tool tenant: `malloc_trim` took the process
//! from 162 to 103 MiB). After those, the process asks glibc to return its free pages, once
//! the burst has settled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use engine::service::catalog::Catalog;

/// How long after a big release the memory is returned: rebuilds and renderings come in
/// bursts (a change, then every client listing again).
const SETTLE: Duration = Duration::from_secs(1);

/// A return is due.
static DUE: AtomicBool = AtomicBool::new(false);

/// Returns free memory to the system [`SETTLE`] from now, unless that is already due.
pub fn release_soon() {
    if DUE.swap(true, Ordering::AcqRel) {
        return;
    }
    tokio::spawn(async {
        tokio::time::sleep(SETTLE).await;
        DUE.store(false, Ordering::Release);
        let _ = tokio::task::spawn_blocking(trim).await;
    });
}

/// Returns free memory after each rebuild of `catalog`, until it stops.
pub fn after_rebuilds(catalog: &Catalog) {
    let mut versions = catalog.versions();
    tokio::spawn(async move {
        while versions.changed().await.is_ok() {
            release_soon();
        }
    });
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim has no preconditions: it only returns free pages of glibc's heaps.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators return memory on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
