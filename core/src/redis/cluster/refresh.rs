//! How the router's map changes: a `MOVED` learnt, and reading the map again (the Sentinel
//! master's address, or `CLUSTER SLOTS`), in the background at most once per [`REFRESH_GAP`],
//! or at once for a call whose connection could not be made (a failover the map has not seen).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::topology::{Addr, SlotMap, parse_slots};
use super::{Discover, Node, Router};
use crate::error::{Error, Result};
use crate::redis::engine::value::{Args, Value};
use crate::redis::engine::{self, resp};
use crate::redis::sentinel::lookup;

/// The least time between two background refreshes of the slot map.
const REFRESH_GAP: Duration = Duration::from_millis(100);

impl Router {
    /// A `MOVED` learnt: `slot` is `node`'s until the next refresh says otherwise.
    pub(super) fn learn(&self, slot: u16, node: Arc<Node>) {
        let mut map = self.map.write();
        *map = Arc::new(map.with(slot, node, |n| &n.addr));
    }

    /// Reads the map again: the Sentinel master's address, or `CLUSTER SLOTS`.
    pub(super) async fn refresh(self: &Arc<Self>) -> Result<()> {
        match &self.discover {
            Discover::Fixed => Ok(()),
            Discover::Cluster { seeds } => self.read_slots(seeds).await,
            Discover::Sentinel { sentinels, service, auth } => {
                let addr = lookup(sentinels, service, self.tls.as_ref(), auth.as_ref(), self.timeout).await?;
                self.serve_all(self.node(&addr));
                Ok(())
            }
        }
    }

    /// Reads `CLUSTER SLOTS` from the known masters, then the seeds, until one answers.
    async fn read_slots(self: &Arc<Self>, seeds: &[Addr]) -> Result<()> {
        let mut candidates: Vec<Addr> = self.map.read().masters.iter().map(|n| n.addr.clone()).collect();
        for s in seeds {
            if !candidates.contains(s) {
                candidates.push(s.clone());
            }
        }
        let mut causes = Vec::new();
        for addr in candidates {
            let node = self.node(&addr);
            let read = async {
                let taken = node.connect(self.timeout, &self.closed).await?;
                let mut slots = Args::new();
                slots.arg("CLUSTER").arg("SLOTS");
                let frame = taken.conn.frame(&slots).await.map_err(|e| {
                    taken.retire();
                    Error::store(e)
                })?;
                let reply = resp::value(&frame).unwrap_or(Value::Nil);
                parse_slots(&reply, &addr.0)
                    .filter(|r| !r.is_empty())
                    .ok_or_else(|| Error::store(format!("unreadable CLUSTER SLOTS: {reply:?}")))
            };
            match engine::within(self.timeout, read).await {
                Ok(ranges) => {
                    self.install(SlotMap::build(&ranges, |a| self.node(a), |n| &n.addr));
                    return Ok(());
                }
                Err(e) => causes.push(format!("{}:{}: {}", addr.0, addr.1, e.message())),
            }
        }
        Err(Error::store(format!("no cluster node answered CLUSTER SLOTS ({})", causes.join("; "))))
    }

    /// Refreshes the map in the background, unless a refresh is running; at most one per
    /// [`REFRESH_GAP`].
    pub(in crate::redis) fn refresh_soon(self: &Arc<Self>) {
        if !self.is_routed() {
            return;
        }
        let Some(runtime) = self.runtime() else { return };
        if self.closed.load(Ordering::Acquire) || self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let wait = self.last_refresh.lock().map_or(Duration::ZERO, |t| REFRESH_GAP.saturating_sub(t.elapsed()));
        let me = self.clone();
        runtime.spawn(async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            me.refresh_and_stamp().await;
            me.refreshing.store(false, Ordering::Release);
        });
    }

    /// After a connection to `node`, the map's master of `slot`, could not be made (so nothing
    /// was sent): reads the map again now, unless one was read within [`REFRESH_GAP`], and says
    /// whether `slot` has another master now (a failover the store had not seen yet).
    ///
    /// The refresh is spawned in the statement that makes it, so that across the await this
    /// future (a part of every call's [`Router::run`] future) holds only its `JoinHandle`: an
    /// `if let` on [`Router::refresh_now`] kept the whole refresh's state (connects, TLS
    /// handshakes) in every call's future (4.7 KB against 0.6 KB, in a debug build), which
    /// each call moved into its box: about half the client's instructions per call with 50 in
    /// flight (callgrind, `core/benches/redis.rs` `TK_BENCH_ONLY=inflight`).
    pub(in crate::redis) async fn moved_after_refresh(self: &Arc<Self>, slot: u16, node: &Arc<Node>) -> bool {
        let refreshing = self.refresh_now().map(|(runtime, refresh)| runtime.spawn(refresh));
        if let Some(refreshing) = refreshing {
            let _ = refreshing.await;
        }
        self.moved(slot, node)
    }

    /// [`Router::moved_after_refresh`] from a plain thread, waiting no longer than `limit` (the
    /// call's time left).
    pub(super) fn moved_after_refresh_blocking(self: &Arc<Self>, slot: u16, node: &Arc<Node>, limit: Duration) -> bool {
        if let Some((runtime, refresh)) = self.refresh_now() {
            crate::redis::runtime::wait_for(runtime, refresh, Some(limit));
        }
        self.moved(slot, node)
    }

    /// The refresh a call that could not connect waits for, and the store's runtime to run it
    /// on; `None` when the map is fixed, was read within [`REFRESH_GAP`], or the store is closed
    /// (the map as it is answers).
    fn refresh_now(self: &Arc<Self>) -> Option<(tokio::runtime::Handle, impl Future<Output = ()> + Send + 'static)> {
        if !self.is_routed() || self.refreshed_lately() {
            return None;
        }
        let me = self.clone();
        Some((self.runtime()?, async move { me.refresh_and_stamp().await }))
    }

    fn refreshed_lately(&self) -> bool {
        self.last_refresh.lock().is_some_and(|t| t.elapsed() < REFRESH_GAP)
    }

    async fn refresh_and_stamp(self: &Arc<Self>) {
        let _ = self.refresh().await;
        *self.last_refresh.lock() = Some(Instant::now());
    }

    fn moved(&self, slot: u16, node: &Arc<Node>) -> bool {
        self.map.read().get(slot).is_some_and(|n| !Arc::ptr_eq(n, node))
    }
}
