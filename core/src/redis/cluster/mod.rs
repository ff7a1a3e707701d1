//! The store's own routing, on one node and on a cluster: every script call goes straight to the
//! node (on a cluster, the master that owns its key), on a multiplexed connection per node (async
//! calls) or a pooled blocking connection per node (sync calls). One node is the degenerate map:
//! it serves every slot, no slot is computed and nothing is read again. The store's other
//! commands (`reset`, loading the function library, deterministic replay, raw commands) take the
//! same map, connections and loop ([`command`]).
//!
//! Why not the redis crate's cluster client: it resends a request after a connection error,
//! so a call whose reply was lost after the server ran it was charged twice (issue #19), and
//! every call hopped through its task. Here the rules are the store's own:
//!
//! - **Routing**: the slot is computed here ([`slot`]: CRC16, hash tags) and looked up in a map
//!   read from `CLUSTER SLOTS` ([`topology`]). One round trip per decision on a stable cluster.
//! - **The engine's rules** (`super::engine`): which replies send the call again (`MOVED`
//!   learnt into the map and refreshed in the background, `ASK`, `TRYAGAIN`, a missing script),
//!   at most [`engine::MAX_ATTEMPTS`] attempts, and never again once it may have run. The router
//!   adds where each attempt goes: after a failed connection it retires the connection and reads
//!   the map again; after one that could not be made (nothing sent) it reads the map at once and
//!   sends the call to the slot's new master if a failover gave it one. The caller bounds the
//!   call by `timeout_ms` (the async path races a timer; the sync path sets its socket timeouts).
//! - **On the caller's runtime**: a runtime bound to the store ([`super::bound`]) gets its own
//!   connection to each node ([`Pipelined::open`]: the store's own, over TCP or TLS, RESP2 or
//!   RESP3), driven on that runtime: a call awaited there writes and reads without crossing to
//!   the store's thread. Until a runtime's connection to a master is up, and after it failed or
//!   a call on it was abandoned, calls take the store's connection to that master, and the first
//!   one that succeeds connects the runtime's again, in the background. Every rule above is the
//!   same on both: the choice of connection is all that differs.

mod command;
mod local;
mod refresh;
pub(super) mod slot;
mod topology;

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::call::{Outcome, ScriptCall};
use super::connect::Endpoint;
use super::engine::{self, Driven, Durable, Exchange, Invoke, Rules, Step, To};
use super::held::{Held, Taken};
use super::options::{Plan, RedisMode};
use super::pipelined::Pipelined;
use super::tls::TlsConfig;
use super::wire::{Lost, Pool};
use crate::error::{Error, Result};
use topology::{Addr, SlotMap};

/// One master (or a node a redirect named): its client and connections.
pub(crate) struct Node {
    /// Its number, in the order nodes were met (a binding's own transport keeps a socket per
    /// number: [`super::routed`]).
    pub(super) id: u32,
    addr: Addr,
    pub(super) endpoint: Endpoint,
    /// The async path's connection from the store's runtime (empty until first used, and after
    /// it failed).
    mux: Held,
    /// One connect at a time per node.
    connecting: tokio::sync::Mutex<()>,
    /// The sync path's blocking connections.
    pool: Pool,
    /// Each bound runtime's own connection to this node (see the module docs).
    /// Few: one per binding's runtime.
    local: parking_lot::RwLock<Vec<local::Local>>,
}

impl Node {
    /// A new async connection, within `timeout` (its driver task is spawned on the runtime
    /// that polls this): [`Pipelined::open`].
    async fn open(&self, timeout: Duration) -> Result<Pipelined> {
        Pipelined::open(self.pool.dial(), timeout)
            .await
            .map_err(|e| Error::store(format!("cannot connect to {}: {e}", self.name())))
    }

    /// The async connection, connected now if there is none (on the runtime that polls this:
    /// its driver task is spawned there).
    async fn connect(&self, timeout: Duration, closed: &AtomicBool) -> Result<Taken> {
        let _one = self.connecting.lock().await;
        if let Some(c) = self.mux.take() {
            return Ok(c);
        }
        let conn = self.open(timeout).await?;
        if closed.load(Ordering::Acquire) {
            return Err(engine::closed());
        }
        Ok(self.mux.hold(conn))
    }

    /// Drops every connection (close, or the node is no longer a master).
    fn release(&self) {
        self.mux.clear();
        self.pool.clear();
        self.local.write().clear();
    }

    fn name(&self) -> String {
        format!("{}:{}", self.addr.0, self.addr.1)
    }
}

/// Routes script calls over a cluster, or to the one node (see the module docs). Shared by the
/// store's paths.
pub(crate) struct Router {
    /// How the map is read: one node, a cluster, or the master the sentinels name.
    discover: Discover,
    /// The first URL's node: scheme, user, password, database and protocol for every node.
    first: Endpoint,
    tls: Option<TlsConfig>,
    timeout: Duration,
    /// The store's runtime: connects and refreshes run there. `None` once closed (a handle
    /// keeps the runtime's driver and its descriptors alive).
    runtime: parking_lot::RwLock<Option<tokio::runtime::Handle>>,
    map: parking_lot::RwLock<Arc<SlotMap<Node>>>,
    /// Every node met so far, by address.
    nodes: parking_lot::Mutex<HashMap<Addr, Arc<Node>>>,
    refreshing: AtomicBool,
    last_refresh: parking_lot::Mutex<Option<Instant>>,
    closed: AtomicBool,
}

/// Where the router learns who serves each slot.
enum Discover {
    /// One node, serving every slot: nothing to read again.
    Fixed,
    /// A cluster: `CLUSTER SLOTS`, from the known masters, then these seeds.
    Cluster { seeds: Vec<Addr> },
    /// The master of a Sentinel service, serving every slot: asked of each sentinel in turn
    /// (logging in with `auth`, the sentinels' own credentials, if given).
    Sentinel { sentinels: Vec<Endpoint>, service: String, auth: Option<(Option<String>, String)> },
}

impl Router {
    /// Connects as `plan` says, within `timeout`: reads the slot map from the first seed that
    /// answers, or the master's address from the first sentinel that answers and connects to
    /// it, or connects to the one node.
    pub(crate) async fn connect(plan: &Plan, timeout: Duration) -> Result<Arc<Router>> {
        let discover = match plan.mode {
            RedisMode::Standalone => Discover::Fixed,
            RedisMode::Cluster => Discover::Cluster {
                seeds: plan.nodes.iter().filter(|n| n.path.is_none()).map(|n| (n.host.clone(), n.port)).collect(),
            },
            RedisMode::Sentinel => Discover::Sentinel {
                sentinels: plan.nodes.clone(),
                service: plan.service_name.clone().unwrap_or_default(),
                auth: plan.sentinel_auth.clone(),
            },
        };
        let router = Arc::new(Router {
            discover,
            first: plan.nodes[0].clone(),
            tls: plan.tls.clone(),
            timeout,
            runtime: parking_lot::RwLock::new(Some(tokio::runtime::Handle::current())),
            map: parking_lot::RwLock::new(Arc::new(SlotMap::empty())),
            nodes: parking_lot::Mutex::new(HashMap::new()),
            refreshing: AtomicBool::new(false),
            last_refresh: parking_lot::Mutex::new(None),
            closed: AtomicBool::new(false),
        });
        let what = match &router.discover {
            Discover::Fixed => {
                let one = &plan.nodes[0];
                let addr = match &one.path {
                    Some(path) => (path.clone(), 0),
                    None => (one.host.clone(), one.port),
                };
                router.serve_all(router.add(&addr, one.clone()));
                // The URLs, passwords hidden.
                Some(plan.urls.iter().map(|u| super::options::redact(u)).collect::<Vec<_>>().join(","))
            }
            Discover::Cluster { .. } => None,
            Discover::Sentinel { service, .. } => {
                router.refresh().await?;
                let master = router.map.read().masters[0].clone();
                Some(format!("the master of {service:?} at {}", master.name()))
            }
        };
        let Some(what) = what else {
            router.refresh().await?;
            return Ok(router);
        };
        // One node, or the Sentinel master: connected now, so that a store whose Redis is down
        // fails at once.
        let node = router.map.read().masters[0].clone();
        match engine::within(timeout, node.connect(timeout, &router.closed)).await {
            Ok(_) => Ok(router),
            Err(e) => Err(Error::store(format!("cannot connect to {what}: {}", e.message()))),
        }
    }

    /// `node` serves every slot (one node, or the Sentinel master).
    fn serve_all(&self, node: Arc<Node>) {
        let all = topology::Range { start: 0, end: (slot::SLOTS - 1) as u16, master: node.addr.clone() };
        self.install(SlotMap::build(&[all], |_| node.clone(), |n| &n.addr));
    }

    /// `map` is the map now; a node that is no longer a master keeps no connection.
    fn install(&self, map: SlotMap<Node>) {
        let masters: Vec<Addr> = map.masters.iter().map(|n| n.addr.clone()).collect();
        *self.map.write() = Arc::new(map);
        for (a, n) in self.nodes.lock().iter() {
            if !masters.contains(a) {
                n.release();
            }
        }
    }

    /// Whether this is a cluster's router (else one node's or the Sentinel master's).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.discover, Discover::Cluster { .. })
    }

    /// Whether calls are routed (a cluster, or the Sentinel master), else go to one fixed node.
    pub(crate) fn is_routed(&self) -> bool {
        !matches!(self.discover, Discover::Fixed)
    }

    /// The rules of this router's calls ([`engine`]): a cluster's and the Sentinel master's
    /// follow the map (a connection that could not be made has it read again; an error saying
    /// it is stale, such as a demoted master's `READONLY`, too).
    fn rules(&self, invoke: Invoke, durable: Option<Durable>) -> Rules {
        Rules { invoke, durable, cluster: self.is_routed() }
    }

    /// The slot `call` routes by (one master serves every slot but on a cluster: no CRC16).
    pub(crate) fn slot_of(&self, key: &[u8]) -> u16 {
        if self.is_cluster() { slot::slot(key) } else { 0 }
    }

    /// Where the store's first node is and how it logs in (the first seed of a cluster).
    pub(crate) fn first_endpoint(&self) -> Option<Endpoint> {
        self.nodes.lock().values().find(|n| n.id == 0).map(|n| n.endpoint.clone())
    }

    /// The node at `addr`, created on first mention (reached as the first URL's node is).
    fn node(&self, addr: &Addr) -> Arc<Node> {
        if let Some(n) = self.nodes.lock().get(addr) {
            return n.clone();
        }
        self.add(addr, self.first.at(&addr.0, addr.1))
    }

    /// The node at `addr`, reached as `endpoint` says, created unless known already.
    fn add(&self, addr: &Addr, endpoint: Endpoint) -> Arc<Node> {
        let mut nodes = self.nodes.lock();
        if let Some(n) = nodes.get(addr) {
            return n.clone();
        }
        let node = Arc::new(Node {
            id: nodes.len() as u32,
            addr: addr.clone(),
            pool: Pool::new(super::connect::Dial::of(&endpoint, self.tls.as_ref()), self.timeout),
            endpoint,
            mux: Held::default(),
            connecting: tokio::sync::Mutex::new(()),
            local: parking_lot::RwLock::new(Vec::new()),
        });
        nodes.insert(addr.clone(), node.clone());
        node
    }

    /// The master serving `slot`; none (a failover left it uncovered) fails the call and
    /// refreshes the map.
    pub(super) fn owner(self: &Arc<Self>, slot: u16) -> Result<Arc<Node>> {
        if let Some(n) = self.map.read().get(slot) {
            return Ok(n.clone());
        }
        self.refresh_soon();
        Err(Error::store(format!("no master serves slot {slot} now (the cluster is failing over?)")))
    }

    /// Node number `id` (a binding's own transport names nodes by number).
    pub(super) fn by_id(&self, id: u32) -> Option<Arc<Node>> {
        self.nodes.lock().values().find(|n| n.id == id).cloned()
    }

    /// The node the engine's [`To`] names, for a reply from `from`: a `MOVED` is learnt (and
    /// the map read again in the background); an empty host is `from`'s.
    pub(super) fn target(self: &Arc<Self>, from: &Arc<Node>, to: To) -> Arc<Node> {
        let addr = |host: String, port: u16| (if host.is_empty() { from.addr.0.clone() } else { host }, port);
        match to {
            To::Same | To::Reroute => from.clone(),
            To::Moved { slot, host, port } => {
                let target = self.node(&addr(host, port));
                self.learn(slot, target.clone());
                self.refresh_soon();
                target
            }
            To::Ask { host, port } => self.node(&addr(host, port)),
        }
    }

    /// The store's runtime, until closed.
    fn runtime(&self) -> Option<tokio::runtime::Handle> {
        self.runtime.read().clone()
    }

    /// Waits `pause` (a `TRYAGAIN`'s) on the store's timer: the caller's runtime may have none.
    async fn pause(&self, pause: Duration) -> Result<()> {
        if !pause.is_zero() {
            let sleep = {
                let runtime = self.runtime().ok_or_else(engine::closed)?;
                let _store = runtime.enter();
                tokio::time::sleep(pause)
            };
            sleep.await;
        }
        Ok(())
    }

    /// `node`'s multiplexed connection; when it has none, one is made on the store's runtime
    /// (nothing is sent before it exists).
    async fn mux(self: &Arc<Self>, node: &Arc<Node>) -> Result<Taken> {
        if let Some(c) = node.mux.take() {
            return Ok(c);
        }
        let runtime = self.runtime().ok_or_else(engine::closed)?;
        let (me, n) = (self.clone(), node.clone());
        let made = runtime.spawn(async move { n.connect(me.timeout, &me.closed).await });
        made.await.map_err(|e| Error::store(format!("the connect was abandoned: {e}")))?
    }

    /// The node a call's next attempt goes to: a redirect's target, else the slot's master; an
    /// error once the store is closed.
    fn next_node(self: &Arc<Self>, to: &mut Option<Arc<Node>>, slot: u16) -> Result<Arc<Node>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(engine::closed());
        }
        match to.take() {
            Some(n) => Ok(n),
            None => self.owner(slot),
        }
    }

    /// What the engine's `step` on `node` leaves to do: the call's outcome (`Break`; the map is
    /// read again in the background when a reply said it is stale), or the node and pause of
    /// its next attempt (`Continue`: a redirect, a `MOVED` learnt).
    fn answered<X: Driven>(
        self: &Arc<Self>,
        x: &X,
        node: &Arc<Node>,
        step: Step<X::Out>,
    ) -> ControlFlow<Result<X::Out>, (Arc<Node>, Duration)> {
        match step {
            Step::Done(outcome) => {
                if x.map_stale() {
                    self.refresh_soon();
                }
                ControlFlow::Break(outcome)
            }
            Step::Again { to, pause } => ControlFlow::Continue((self.target(node, to), pause)),
            Step::More => ControlFlow::Break(Err(Error::store("the engine asked for a frame it was not given"))),
        }
    }

    /// No connection to `node` could be made (nothing was sent): `Ok` when the engine lets the
    /// call go to the slot's master if the map, read again, names another one now; else the
    /// call's error, the map read again in the background.
    fn unsent<X: Driven>(self: &Arc<Self>, x: &mut X, e: Error, node: &Node) -> Result<()> {
        match x.unsent(e) {
            Step::Again { .. } => Ok(()),
            Step::Done(Err(e)) => {
                self.refresh_soon();
                Err(e)
            }
            _ => Err(self.no_connection(node)),
        }
    }

    /// The error of a call that found no connection to `node`, and no other master for its
    /// slot; the map is read again in the background.
    fn no_connection(self: &Arc<Self>, node: &Node) -> Error {
        self.refresh_soon();
        Error::store(format!("{}: no connection", node.name()))
    }

    /// The exchange of `call` under this router's rules ([`Router::run`] drives it), and the
    /// slot it routes by.
    pub(crate) fn exchange<'c>(
        &self,
        invoke: Invoke,
        durable: Option<Durable>,
        call: &'c ScriptCall,
    ) -> (u16, Exchange<'c>) {
        let slot = self.slot_of(call.keys.first().map_or(&b""[..], |k| k.as_bytes()));
        (slot, Exchange::new(call, self.rules(invoke, durable)))
    }

    /// Runs `x` (a script call's [`Exchange`], or a round of other commands: [`command`]) on
    /// the master of `slot` from the caller's task (the caller bounds it by the timeout),
    /// driven by the engine ([`Pipelined::attempt`]): its outcome. `local` is the caller's
    /// runtime when it is bound to the store: its own connections serve the call once up. The
    /// router's part is where each attempt goes, as in [`Router::run_blocking`].
    pub(crate) async fn run<X: Driven>(
        self: &Arc<Self>,
        slot: u16,
        mut x: X,
        local: Option<&tokio::runtime::Handle>,
    ) -> Result<X::Out> {
        let mut to = None;
        loop {
            let node = self.next_node(&mut to, slot)?;
            let own = local.and_then(|h| node.local(h.id()));
            let (taken, on_store) = match own {
                Some(c) => (c, false),
                None => match self.mux(&node).await {
                    Ok(c) => (c, true),
                    // Nothing was sent: if the map, read again now, names another master, go
                    // there.
                    Err(e) => {
                        self.unsent(&mut x, e, &node)?;
                        if self.moved_after_refresh(slot, &node).await {
                            continue;
                        }
                        return Err(self.no_connection(&node));
                    }
                },
            };
            // The caller bounds this future by the timeout and drops it when that fires: the
            // guard then retires the connection, as a lost reply does below, so a master that
            // stopped answering is reconnected to by the next call rather than holding it too.
            let guard = taken.guard();
            let sent = taken.conn.attempt(&mut x).await;
            guard.disarm();
            // The node answered on the store's connection: the caller's runtime connects its own
            // (the first call there, or the first that succeeds after its own failed).
            if let (Some(h), true, true) = (local, on_store, sent.is_ok()) {
                self.connect_local(&node, h);
            }
            match sent.map(|step| self.answered(&x, &node, step)) {
                Ok(ControlFlow::Break(outcome)) => return outcome,
                Ok(ControlFlow::Continue((next, pause))) => {
                    // Boxed: a `TRYAGAIN` is rare, and its timer's state would add to every
                    // call's future (`RedisStore::call`).
                    Box::pin(self.pause(pause)).await?;
                    to = Some(next);
                }
                // The request may have reached the server: never sent again.
                Err(e) => {
                    taken.retire();
                    self.refresh_soon();
                    return Err(Error::store(e));
                }
            }
        }
    }

    /// [`Router::run`] on the calling thread, on the key's master's pooled blocking connections,
    /// driven by the engine ([`Pool::drive`]): the call's outcome. The router's part is
    /// where each attempt goes: the slot's master from the map, a redirect's node (a `MOVED`
    /// learnt), or after a connection that could not be made, the map read again.
    pub(crate) fn run_blocking(
        self: &Arc<Self>,
        invoke: Invoke,
        durable: Option<Durable>,
        call: &ScriptCall,
    ) -> Result<Outcome> {
        let started = Instant::now();
        let deadline = started + self.timeout;
        let ms = self.timeout.as_millis() as u64;
        let (slot, mut x) = self.exchange(invoke, durable, call);
        let mut to = None;
        loop {
            if started.elapsed() >= self.timeout {
                return Err(engine::timed_out_because(ms, &"redirected too long"));
            }
            let node = self.next_node(&mut to, slot)?;
            let error = |e: std::io::Error| {
                let timeout = matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock);
                if timeout || started.elapsed() >= self.timeout {
                    engine::timed_out_because(ms, &e)
                } else {
                    Error::store(format!("{}: {e}", node.name()))
                }
            };
            match node.pool.drive(&mut x, deadline) {
                // A redirect's pause (`TRYAGAIN`'s) was taken by the driver, on this node.
                Ok(step) => match self.answered(&x, &node, step) {
                    ControlFlow::Break(outcome) => return outcome,
                    ControlFlow::Continue((next, _)) => to = Some(next),
                },
                // Nothing was sent: if the map, read again now, names another master, go there.
                Err(Lost::Unsent(e)) => {
                    self.unsent(&mut x, error(e), &node)?;
                    if self.moved_after_refresh_blocking(slot, &node, self.timeout.saturating_sub(started.elapsed())) {
                        continue;
                    }
                    return Err(self.no_connection(&node));
                }
                // Dropped with the connection: a call that may have counted is never resent,
                // and its late reply can never be read as the next call's.
                Err(Lost::Sent(e)) => {
                    self.refresh_soon();
                    return Err(error(e));
                }
            }
        }
    }

    /// Drops every connection at once; later calls fail as closed.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        *self.runtime.write() = None;
        for n in self.nodes.lock().values() {
            n.release();
        }
    }
}

#[cfg(test)]
mod tests;
