//! Who sees which tool, under which name — kept live.
//!
//! A [`Catalog`] holds the current [`Snapshot`] behind an atomic pointer (`arc-swap`):
//! readers take it without locks and never wait on a rebuild. A background task LISTENs on
//! [`store::CHANNEL`](crate::store::CHANNEL); a notification (every admin write sends one in
//! its transaction) triggers a rebuild, and a burst of notifications that arrives while one
//! rebuild runs is coalesced into the next. After the listener (re)connects the task reloads
//! everything, since notifications sent while it was away are lost.

pub mod apps;
pub mod items;
mod presets;
pub mod search;
mod snapshot;
pub mod visibility;

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

pub use presets::check_presets;
pub use snapshot::{
    CatalogTool, Conflict, DEFAULT_TIMEOUT, FOUND_BY_DEFAULT, MAX_FOUND, META_TOOL, SEARCH_TOOL, Snapshot,
    TenantTools, search_tool,
};

use crate::store::{self, CHANNEL};

#[derive(Debug, Clone, Default)]
pub struct CatalogOptions {
    /// `TOOLGATE_TOOLS_ENABLED=false` in this process: no tool is visible, whatever the
    /// stored setting says.
    pub force_tools_off: bool,
}

/// A handle to the live catalog. Clones share one snapshot and one background task, which
/// stops when the last clone is dropped.
#[derive(Clone)]
pub struct Catalog {
    pool: PgPool,
    current: Arc<ArcSwap<Snapshot>>,
    /// Asks the task for a rebuild now, without waiting for a notification.
    wake: Arc<Notify>,
    versions: watch::Receiver<u64>,
    _task: Arc<AbortOnDrop>,
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// State shared by the handle and its background task.
struct Rebuilder {
    pool: PgPool,
    options: CatalogOptions,
    current: Arc<ArcSwap<Snapshot>>,
    versions: watch::Sender<u64>,
    wake: Arc<Notify>,
    /// The tools of the last rebuild, reused while they are unchanged.
    bases: std::sync::Mutex<Option<Arc<snapshot::Bases>>>,
}

impl Catalog {
    /// Loads the first snapshot, then keeps it current in the background.
    #[tracing::instrument(skip_all, err)]
    pub async fn start(pool: PgPool, options: CatalogOptions) -> crate::Result<Self> {
        let current = Arc::new(ArcSwap::from_pointee(Snapshot::empty()));
        let (versions_tx, versions) = watch::channel(0);
        let wake = Arc::new(Notify::new());
        let rebuilder = Rebuilder {
            pool: pool.clone(),
            options,
            current: current.clone(),
            versions: versions_tx,
            wake: wake.clone(),
            bases: Default::default(),
        };
        rebuilder.rebuild().await?;
        let task = tokio::spawn(rebuilder.run());
        Ok(Catalog { pool, current, wake, versions, _task: Arc::new(AbortOnDrop(task)) })
    }

    /// The current snapshot; cheap, lock-free, never blocked by a rebuild.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Waits, at most `within`, until the snapshot holds every configuration write committed
    /// before this call (read-your-writes for whoever just wrote); false if it does not by then.
    pub async fn caught_up(&self, within: Duration) -> crate::Result<bool> {
        let written = store::catalog::config_epoch(&self.pool).await?;
        if self.current.load().config_epoch >= written {
            return Ok(true);
        }
        // The notification may be late, or lost with a listener still reconnecting.
        self.wake.notify_one();
        let mut versions = self.versions.clone();
        let holds = versions.wait_for(|_| self.current.load().config_epoch >= written);
        Ok(matches!(tokio::time::timeout(within, holds).await, Ok(Ok(_))))
    }

    /// Notified with the new version after every rebuild (to tell MCP sessions their tool
    /// list changed).
    pub fn versions(&self) -> watch::Receiver<u64> {
        self.versions.clone()
    }
}

impl Rebuilder {
    async fn rebuild(&self) -> crate::Result<()> {
        let started = std::time::Instant::now();
        let reusable = self.bases.lock().expect("bases").clone();
        let mut loaded = store::catalog::load(&self.pool, |epoch, sources, members| {
            reusable.as_ref().is_some_and(|bases| bases.unchanged(epoch, sources, members))
        })
        .await?;
        let loading = started.elapsed();
        let bases = match (loaded.tools.take(), loaded.items.take(), reusable) {
            (Some(tools), Some(items), _) => Arc::new(snapshot::Bases::build(&loaded, &tools, &items)),
            (None, None, Some(reusable)) => reusable,
            _ => unreachable!("load reads the tools and items when there is nothing to reuse"),
        };
        *self.bases.lock().expect("bases") = Some(bases.clone());
        let version = self.current.load().version + 1;
        let snapshot = snapshot::build(&loaded, &bases, version, self.options.force_tools_off);
        self.current.store(Arc::new(snapshot));
        self.versions.send_replace(version);
        tracing::debug!(version, elapsed = ?started.elapsed(), ?loading, "catalog rebuilt");
        Ok(())
    }

    /// Rebuilds until it succeeds, keeping the last good snapshot meanwhile (the database
    /// may be briefly away).
    async fn rebuild_until_done(&self) {
        let mut delay = Duration::from_millis(100);
        while let Err(err) = self.rebuild().await {
            tracing::warn!(error = %err, retry_in = ?delay, "catalog rebuild failed; serving the last snapshot");
            self.pause(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }

    /// Waits `delay` before trying again, or less if someone waits for a write to show.
    async fn pause(&self, delay: Duration) {
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = self.wake.notified() => {}
        }
    }

    async fn run(self) {
        let mut delay = Duration::from_millis(100);
        loop {
            let mut listener = match self.listen().await {
                Ok(listener) => listener,
                Err(err) => {
                    tracing::warn!(error = %err, retry_in = ?delay, "catalog listener cannot connect");
                    self.pause(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            delay = Duration::from_millis(100);
            // Whatever changed while we were not listening is unknown: reload everything.
            self.rebuild_until_done().await;
            loop {
                let heard = tokio::select! {
                    heard = listener.try_recv() => heard,
                    () = self.wake.notified() => {
                        self.rebuild_until_done().await;
                        continue;
                    }
                };
                match heard {
                    Ok(Some(_)) => {
                        // Coalesce: everything already queued is covered by one rebuild.
                        while listener.next_buffered().is_some() {}
                        self.rebuild_until_done().await;
                    }
                    Ok(None) => {
                        tracing::warn!("catalog listener lost its connection; reconnecting");
                        break;
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, "catalog listener failed; reconnecting");
                        break;
                    }
                }
            }
        }
    }

    async fn listen(&self) -> Result<PgListener, sqlx::Error> {
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener.listen(CHANNEL).await?;
        Ok(listener)
    }
}
