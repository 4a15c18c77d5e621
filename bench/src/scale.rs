//! Many clients listening at once, each on a keep-alive connection of its own: a handshake-era
//! session's `GET` stream or a 2026-07-28 `subscriptions/listen` stream. What they cost the
//! server while idle, and how long a `list_changed` takes to reach all of them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use http_body_util::BodyExt;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::raw::{RawMcp, Revision};

/// Open listening streams; closed when dropped.
pub struct Listeners {
    streams: JoinSet<()>,
    heard: mpsc::UnboundedReceiver<Instant>,
}

/// What a stream hears when the tenant's tools change.
const HEARD: &[u8] = b"notifications/tools/list_changed";

/// Streams opened at once while opening many.
const OPENING: usize = 32;

impl Listeners {
    /// Opens `n` streams at the MCP endpoint `url` with `key`, each on its own connection.
    pub async fn open(url: &str, key: &str, revision: Revision, n: usize) -> Result<Self> {
        let (tell, heard) = mpsc::unbounded_channel();
        let permits = Arc::new(Semaphore::new(OPENING));
        let mut opening = JoinSet::new();
        for _ in 0..n {
            let (url, key, tell, permits) = (url.to_string(), key.to_string(), tell.clone(), permits.clone());
            opening.spawn(async move {
                let permit = permits.acquire_owned().await?;
                let mut client = RawMcp::connect_in(&url, Some(&key), revision).await?;
                let mut body = client.listen().await?;
                drop(permit);
                anyhow::Ok(async move {
                    // The client keeps the connection; each `tools/list_changed` is told once.
                    let _client = client;
                    let mut tail = Vec::new();
                    while let Some(Ok(frame)) = body.frame().await {
                        let Some(data) = frame.data_ref() else { continue };
                        tail.extend_from_slice(data);
                        if tail.windows(HEARD.len()).any(|w| w == HEARD) {
                            let _ = tell.send(Instant::now());
                            tail.clear();
                        } else {
                            tail.drain(..tail.len().saturating_sub(HEARD.len() - 1));
                        }
                    }
                })
            });
        }
        let mut streams = JoinSet::new();
        while let Some(opened) = opening.join_next().await {
            streams.spawn(opened??);
        }
        Ok(Listeners { streams, heard })
    }

    /// How many streams were opened.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// How long after `since` each stream heard of a change, waiting up to `within` for all of
    /// them; sorted, fewer than [`len`](Self::len) when some did not hear in time.
    pub async fn heard_since(&mut self, since: Instant, within: Duration) -> Vec<Duration> {
        let mut delays = Vec::new();
        let until = tokio::time::Instant::from_std(since + within);
        while delays.len() < self.streams.len() {
            match tokio::time::timeout_at(until, self.heard.recv()).await {
                Ok(Some(at)) if at >= since => delays.push(at - since),
                Ok(Some(_)) => {} // heard before this change
                _ => break,
            }
        }
        delays.sort();
        delays
    }
}
