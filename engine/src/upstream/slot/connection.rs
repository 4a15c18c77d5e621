//! The connection's task: connects (opening an OAuth server's token first), watches the
//! connection (a health probe, the session ending, a call or a listing finding it broken) and
//! reconnects with exponential backoff and jitter, sooner when a call or an administrator wants
//! it; and how a call or an administrator gets the connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::OptionFuture;
use rmcp::ClientCacheConfig;
use rmcp::service::{Peer, RoleClient};

use super::Slot;
use crate::model::UpstreamError;
use crate::store::servers::{Credential, Endpoint};
use crate::tool::ToolError;
use crate::upstream::ConnectionStatus;
use crate::upstream::connect::{connect, is_stateless, service_failure};
use crate::upstream::direct::DirectCalls;
use crate::upstream::handler::Handler;
use crate::upstream::oauth::{self, Token};
use crate::upstream::session::{SessionWatch, Watched};

/// The shortest pause between reconnection attempts that calls ask for.
const DEMAND_RETRY: Duration = Duration::from_millis(500);

impl Slot {
    pub(in crate::upstream) async fn run(self: Arc<Self>, endpoint: Endpoint) {
        let mut backoff = Duration::from_millis(200);
        let mut token: Option<Arc<Token>> = None;
        'connecting: while !self.cancel.is_cancelled() {
            // A connection retried after a failure stays down until it is back.
            self.set(|s| {
                if !s.retrying {
                    s.status = ConnectionStatus::Connecting;
                }
            });
            // Only this task counts connections: the next one gets the next number.
            let connection = self.state.borrow().connection + 1;
            let handler = Handler { slot: Arc::downgrade(&self), connection };
            let session = SessionWatch::default();
            let connecting = async {
                if token.is_none() {
                    token = self.token(&endpoint).await?;
                }
                let http = Watched { client: self.http.clone(), watch: session.clone() };
                let (commands, stderr) = (&self.config.stdio_commands, &self.stderr);
                connect(&endpoint, handler, http, token.as_deref(), commands, stderr).await
            };
            let connected = tokio::select! {
                () = self.cancel.cancelled() => break,
                result = tokio::time::timeout(self.config.connect_timeout, connecting) => {
                    result.unwrap_or(Err(UpstreamError::ConnectTimeout(self.config.connect_timeout)))
                }
            };
            match connected {
                Ok(service) => {
                    backoff = Duration::from_millis(200);
                    let peer = service.peer().clone();
                    let direct =
                        DirectCalls::of(&endpoint, &peer, &self.http, token.clone(), session).map(Arc::new);
                    self.set(|s| {
                        s.status = ConnectionStatus::Ready;
                        s.peer = Some(peer.clone());
                        s.direct = direct;
                        s.last_seen = Some(Instant::now());
                        s.retrying = false;
                        s.connection = connection;
                    });
                    tracing::info!(servers = %self.label(), "upstream connected");
                    // Probes must reach the server, never a cached answer.
                    peer.set_response_cache_config(ClientCacheConfig::disabled()).await;
                    let stop = service.cancellation_token();
                    // In the background: a server slow to answer must not hold up the rest.
                    tokio::spawn({
                        let (slot, peer) = (self.clone(), peer.clone());
                        async move { slot.resubscribe(peer).await }
                    });
                    if is_stateless(&peer) {
                        // Ends with the connection.
                        let (slot, peer) = (self.clone(), peer.clone());
                        tokio::spawn(async move { slot.follow(&peer, connection).await });
                    }
                    if self.discovers {
                        self.discover(&peer, connection, &self.member_names()).await;
                    }
                    // A call or a listing that finds the connection broken takes it down
                    // ([`Slot::lose`]); this task then reconnects.
                    let mut watched = self.state.subscribe();
                    let lost = async move {
                        let _ = watched.wait_for(|s| s.peer.is_none()).await;
                    };
                    let waiting = service.waiting();
                    let probe = self.probe(&peer, token.as_deref());
                    tokio::pin!(lost, waiting, probe);
                    loop {
                        tokio::select! {
                            () = self.cancel.cancelled() => { stop.cancel(); break 'connecting; }
                            () = &mut lost => break,
                            quit = &mut waiting => {
                                self.lose(connection, format!("the connection closed ({quit:?})"));
                                break;
                            }
                            err = &mut probe => {
                                self.lose(connection, err);
                                break;
                            }
                            () = self.joined.notified() => {
                                self.discover(&peer, connection, &self.member_names()).await;
                            }
                        }
                    }
                    stop.cancel();
                    let reason =
                        self.state.borrow().last_error.as_ref().map(|f| f.reason.clone()).unwrap_or_default();
                    tracing::warn!(servers = %self.label(), %reason, "upstream connection lost; reconnecting");
                }
                Err(err @ UpstreamError::NeedsAuthorization(_)) => {
                    // Nothing to retry until someone authorizes: the configuration change that
                    // brings then starts this connection again.
                    tracing::info!(servers = %self.label(), "upstream connection waits for an authorization");
                    self.set(|s| {
                        s.fail(err.to_string());
                        s.status = ConnectionStatus::NeedsAuthorization;
                        s.parked = true;
                    });
                    self.cancel.cancelled().await;
                    break;
                }
                Err(UpstreamError::Refused(challenge)) if let Some((id, url)) = &self.authorization => {
                    // Retrying cannot help: the configuration change that marking it brings
                    // starts this connection again, to wait for the authorization.
                    let reason = oauth::refused(&self.pool, &self.secrets, url, *id, &challenge).await;
                    self.set(|s| {
                        s.fail(reason);
                        s.status = ConnectionStatus::NeedsAuthorization;
                        s.parked = true;
                    });
                    self.cancel.cancelled().await;
                    break;
                }
                Err(err @ UpstreamError::NotAllowed(_)) => {
                    // Nothing to retry: the program stays refused until the server is changed
                    // (a new connection) or Toolgate restarts with another list.
                    tracing::warn!(servers = %self.label(), error = %err, "upstream program not started: not allowed");
                    self.set(|s| {
                        s.fail(err.to_string());
                        s.parked = true;
                    });
                    self.cancel.cancelled().await;
                    break;
                }
                Err(err) => {
                    tracing::warn!(servers = %self.label(), error = %err, retry_in = ?backoff, "upstream connection failed");
                    self.set(|s| s.fail(err.to_string()));
                    // A token that failed to open is opened again, fresh.
                    token = None;
                }
            }
            let jitter = Duration::from_millis(rand::random_range(0..=backoff.as_millis() as u64 / 4));
            let pause = backoff + jitter;
            let wanted = async {
                tokio::time::sleep(DEMAND_RETRY.min(pause)).await;
                self.wanted.notified().await;
            };
            tokio::select! {
                () = self.cancel.cancelled() => break,
                () = tokio::time::sleep(pause) => {}
                () = wanted => {}
                () = self.now.notified() => {}
            }
            backoff = (backoff * 2).min(self.config.max_backoff);
        }
        self.set(|s| {
            s.status = ConnectionStatus::Down;
            s.peer = None;
            s.direct = None;
        });
    }

    /// The token an OAuth server's connection carries: `None` for another server.
    async fn token(&self, endpoint: &Endpoint) -> Result<Option<Arc<Token>>, UpstreamError> {
        let server = || self.member_names().first().cloned().unwrap_or_default();
        match endpoint.credential {
            Credential::None => Ok(None),
            Credential::Missing(_) => Err(UpstreamError::NeedsAuthorization(server())),
            Credential::OAuth { id, .. } => {
                let source = self.members().first().map(|m| m.source_id).unwrap_or_default();
                Token::open(&self.pool, &self.secrets, &self.http, source, id)
                    .await
                    .map(|t| Some(Arc::new(t)))
            }
        }
    }

    /// Probes the connection every `health_interval` (renewing a client credentials token
    /// first); returns when a probe fails.
    async fn probe(&self, peer: &Peer<RoleClient>, token: Option<&Token>) -> String {
        loop {
            tokio::time::sleep(self.config.health_interval).await;
            if let Some(Err(err)) = OptionFuture::from(token.map(Token::renew)).await {
                return err.to_string();
            }
            match tokio::time::timeout(self.config.connect_timeout, self.tools_page(peer, None)).await {
                Ok(Ok(_)) => self.set(|s| s.last_seen = Some(Instant::now())),
                Ok(Err(err)) => return format!("health probe failed: {}", service_failure(&err)),
                Err(_) => {
                    return format!("health probe got no answer within {:?}", self.config.connect_timeout);
                }
            }
        }
    }

    /// The connection's peer: at once when ready, after a wait while connecting for the first
    /// time, never when down or reconnecting after a failure.
    pub(in crate::upstream) async fn peer(&self, server: &str) -> Result<(Peer<RoleClient>, u64), ToolError> {
        let mut state = self.state.subscribe();
        let waiting = state.wait_for(|s| s.status != ConnectionStatus::Connecting || s.retrying);
        // `wait_for` answers with a read guard on the state: it must be gone before the state
        // is read again, or a writer waiting in between deadlocks both.
        let settled = matches!(tokio::time::timeout(self.config.connect_timeout, waiting).await, Ok(Ok(_)));
        let current = self.state.borrow().clone();
        match (settled, current.peer) {
            (true, Some(peer)) => Ok((peer, current.connection)),
            _ => {
                self.wanted.notify_one();
                Err(ToolError::tool(format!(
                    "MCP server `{server}` is unavailable right now; try again later"
                )))
            }
        }
    }

    /// The connection, made again at once if it is down (not after the rest of its backoff);
    /// what the attempt failed with otherwise.
    pub(in crate::upstream) async fn connect_now(&self) -> Result<(Peer<RoleClient>, u64), String> {
        let asked = Instant::now();
        let mut state = self.state.subscribe();
        {
            let current = state.borrow();
            if current.parked {
                let why = current.last_error.as_ref().map(|f| f.reason.clone());
                return Err(why.unwrap_or_default());
            }
            if current.peer.is_none() {
                self.now.notify_one();
            }
        }
        let attempt =
            state.wait_for(|s| s.peer.is_some() || s.last_error.as_ref().is_some_and(|f| f.at >= asked));
        // The attempt may open a token first, then has the whole connect timeout.
        let within = self.config.connect_timeout + Duration::from_secs(1);
        let answered = tokio::time::timeout(within, attempt).await.is_ok();
        let current = self.state.borrow().clone();
        match (current.peer, current.last_error) {
            (Some(peer), _) => Ok((peer, current.connection)),
            (None, Some(failure)) if answered => Err(format!("could not connect: {}", failure.reason)),
            (None, failure) => Err(format!(
                "no connection within {:?}{}",
                self.config.connect_timeout,
                failure
                    .map(|failure| format!(" (it last failed with: {})", failure.reason))
                    .unwrap_or_default()
            )),
        }
    }
}
