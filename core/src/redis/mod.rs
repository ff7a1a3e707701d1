//! [`RedisStore`]: the distributed [`Store`]. Every decision is one Lua script run atomically on
//! Redis (`core/lua/`, embedded), so a fleet of processes shares one limit.
//!
//! - **One round trip per decision**: `FCALL` on Redis >= 7 (the scripts loaded once as a
//!   function library, which persists and replicates), else `EVALSHA`; the one fallback when a
//!   node lacks them, and every other rule of the exchange, is the engine's (`engine/`:
//!   `docs/redis.md`, "How a call travels"; `scripting` in [`RedisOptions`] forces either way).
//! - **At most once**: a call is never sent again once it may have reached a server; only a
//!   redirect or a missing script (answered before anything runs) or a connection that could not
//!   be made is followed by another send (`docs/redis.md`, "At most once").
//! - **Any topology**: one node, a Redis Cluster, or the master of a Sentinel service; over TLS
//!   (rustls) or not ([`RedisOptions`], `docs/redis.md`). One router routes every call
//!   (`cluster/`): to the one node, to the master the sentinels name, or on a cluster to the
//!   key's master (the slot computed here, a connection per master, `MOVED`/`ASK` followed).
//! - **Durable charges**, opt-in: `WAIT` after each call in the same round trip
//!   ([`RedisOptions::durable_replicas`]).
//! - **A bounded wait**: every call answers within `timeout_ms` or fails with
//!   `store_unavailable` carrying the cause; the limiter's [`crate::FailPolicy`] then decides.
//!   The connection re-establishes itself in the background after Redis comes back.
//! - **Three drivers of one engine** (`docs/redis.md`, "How a call travels"): a sync call runs on
//!   the calling thread over a pooled blocking connection (`wire.rs`; no hop through the store's
//!   runtime); an async call runs on the caller's task over a pipelined connection
//!   (`pipelined.rs`; nothing spawned per call), the store's shared one, driven on the store's
//!   private runtime so that its futures may be awaited from any executor, or a tokio runtime's
//!   own once that runtime is bound (`bound.rs`, [`RedisStore::bind_current_runtime`]); and a
//!   binding's own socket ([`transport`]: the same calls as bytes, for an event loop such as
//!   Node's). Only deterministic replay is handed to the store's runtime and waited for.
//! - **Clock**: `Now::Server` sends `now = "0"` and the script reads Redis's `TIME`.
//! - **Deterministic replay** (for conformance vectors and the dual-path proof): Redis expires
//!   keys on its wall clock, not the caller's; in this mode the store persists every key and
//!   expires it itself on the caller's clock (see `replay.rs`).
//!
//! Keys and state layout are ThrottleKit 1.x's (docs/semantics.md), so mixed fleets share
//! limits. Multi-dimensional checks need all their keys in one hash slot on a cluster:
//! [`crate::MultiLimiter`] builds them as `prefix:{tag}:name:key`.

pub mod acl;
mod batch;
mod bound;
mod call;
mod cluster;
mod connect;
mod counts;
mod engine;
mod float_text;
mod held;
mod lua_min;
mod options;
mod pipelined;
pub mod prepared;
mod replay;
pub mod rest;
pub mod routed;
mod runtime;
mod scoped;
mod script_shas;
pub mod scripts;
mod sentinel;
mod socket;
mod tls;
pub mod transport;
mod wire;

pub use batch::Batch;
pub use engine::value::Value;
pub use options::{RedisMode, RedisOptions, Scripting, split_urls};
pub use scoped::{conformance_stores, conformance_stores_with};

use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::runtime::Runtime;

use crate::error::{Error, Result};
use crate::store::{
    BoxFuture, DimensionCall, DimensionLease, MultiGrant, MultiReply, Now, Reply, Rule, Store, Transform,
};
use call::{Outcome, ScriptCall};
use runtime::OwnedRuntime;

thread_local! {
    /// Set on the store runtime's own threads, where blocking on the runtime would deadlock.
    static ON_STORE_RUNTIME: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The connection and everything a call needs, shared with the tasks on the store's runtime.
struct Inner {
    /// Where every call and command goes, from the caller's task or thread: one node, a
    /// cluster's masters, or the Sentinel master ([`cluster::Router`]).
    router: Arc<cluster::Router>,
    /// `WAIT` after every call ([`RedisOptions::durable_replicas`]).
    durable: Option<engine::Durable>,
    /// `FCALL` or `EVALSHA`, chosen at connect from [`RedisOptions::scripting`].
    invoke: engine::Invoke,
    /// Runtimes bound with [`RedisStore::bind_current_runtime`] (their connections are the
    /// router's: [`cluster`]). Few: one per binding's runtime.
    bound: parking_lot::RwLock<Vec<tokio::runtime::Id>>,
    /// Some runtime is bound (spares unbound stores the runtime lookup).
    any_bound: AtomicBool,
    /// Calls awaited on a tokio runtime bind it ([`RedisStore::bind_runtimes`]).
    auto_bind: AtomicBool,
    /// The node a binding's own transport talks to, as its URL says ([`RedisStore::endpoint`]).
    info: transport::Endpoint,
    timeout: Duration,
    replay: Option<tokio::sync::Mutex<replay::Book>>,
    closed: AtomicBool,
}

/// A [`Store`] on Redis. Cheap to share behind an `Arc`; one multiplexed connection serves
/// every limiter using it, pipelining concurrent calls.
pub struct RedisStore {
    inner: Arc<Inner>,
    options: RedisOptions,
    runtime: OwnedRuntime,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").field("options", &self.options).finish()
    }
}

fn build_runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("throttlekit-redis")
        .on_thread_start(|| {
            ON_STORE_RUNTIME.with(|f| f.set(true));
            runtime::block_sigpipe();
        })
        .enable_all()
        .build()
        .map_err(|e| Error::store(format!("cannot start the Redis store's runtime: {e}")))
}

/// Waits for `fut` on `runtime` from any thread that is not one of the runtime's own: from a
/// plain thread, or from inside another async runtime (blocking that thread, without panicking).
fn block_on<T: Send + 'static>(
    runtime: &OwnedRuntime,
    fut: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    if ON_STORE_RUNTIME.with(|f| f.get()) {
        return Err(Error::not_implemented(
            "a blocking Redis call from the Redis store's own runtime thread (await the async method)",
        ));
    }
    let runtime = runtime.handle().ok_or_else(engine::closed)?;
    runtime::wait_for(runtime, fut, None).ok_or_else(|| Error::store("the Redis store's runtime stopped"))?
}

impl RedisStore {
    /// Connects (within `timeout_ms`) and returns the store.
    pub async fn connect(options: RedisOptions) -> Result<RedisStore> {
        // Owned before the first await: if connecting fails, the runtime is dropped inside the
        // caller's async context, which only `OwnedRuntime`'s background shutdown allows.
        let runtime = OwnedRuntime::new(build_runtime()?);
        let opts = options.clone();
        let inner = runtime.spawn(Inner::connect(opts)).ok_or_else(|| Error::store("the store's runtime stopped"))?;
        let inner = inner.await.map_err(|e| Error::store(format!("connecting failed: {e}")))??;
        Ok(RedisStore { inner: Arc::new(inner), options, runtime })
    }

    /// [`RedisStore::connect`] for callers without an async runtime.
    pub fn connect_blocking(options: RedisOptions) -> Result<RedisStore> {
        let runtime = OwnedRuntime::new(build_runtime()?);
        let inner = block_on(&runtime, Inner::connect(options.clone()))?;
        Ok(RedisStore { inner: Arc::new(inner), options, runtime })
    }

    /// The options the store was built with.
    pub fn options(&self) -> &RedisOptions {
        &self.options
    }

    /// Where the store connects and how it logs in, parsed from its URL exactly as its own
    /// connections parse it: for a binding that brings its own transport
    /// ([`transport`]).
    pub fn endpoint(&self) -> transport::Endpoint {
        self.inner.info.clone()
    }

    /// Whether the store is on a cluster or under Sentinel: its calls are routed to wherever
    /// the key lives now, so a binding's own transport (one fixed address) must not be used.
    pub fn is_routed(&self) -> bool {
        self.inner.router.is_routed()
    }

    /// A cluster store's routes, for a binding that brings its own sockets ([`routed`]);
    /// `None` on any other store (and under deterministic replay).
    pub fn routes(&self) -> Option<routed::Routes> {
        if self.inner.replay.is_some() {
            return None;
        }
        Some(self.inner.router.clone()).filter(|r| r.is_cluster()).map(routed::Routes::new)
    }

    /// Whether the store runs its scripts as functions (`FCALL`) rather than `EVALSHA`.
    pub fn uses_functions(&self) -> bool {
        self.inner.invoke == engine::Invoke::Functions
    }

    /// Whether [`Store::close`] was called: a binding's own transport answers every later call
    /// with the same `store_unavailable` as the store's.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Runs `call` from the caller's task under the call timeout: routed ([`cluster`]), or in
    /// deterministic-replay mode as its rounds ([`replay`]).
    ///
    /// Every async call boxes this future (the [`Store`] methods' futures), so its size is an
    /// allocation per call, and the allocator's size class decides how often a call takes its
    /// slow path: at 2936 bytes (3 KB class, 4 per slab, 20 cached per thread) serve's 32
    /// requests in flight per thread went past the thread's cache each round (`docs/serve.md`,
    /// "Where the time goes"). So the call, the exchange and the routed work are each stored once
    /// (borrowed below, pinned in place), and the rare replay path is boxed apart.
    async fn call(&self, call: &ScriptCall, now: &Now) -> Result<Outcome> {
        if self.inner.replay.is_some() {
            let now = *now;
            return Box::pin(async move { self.timed(pin!(self.inner.replayed(call, now))).await }).await;
        }
        let local = self.local_runtime();
        let router = &self.inner.router;
        let (slot, mut x) = router.exchange(self.inner.invoke, self.inner.durable, call);
        self.timed(pin!(router.run(slot, &mut x, local.as_ref()))).await
    }

    /// `work`, awaited on the caller's task, under the call timeout on the store's timer; not
    /// started once the store is closed. `work` comes pinned by the caller, which stores it: an
    /// async function's argument keeps its own copy beside the one it awaits.
    async fn timed<T>(&self, work: Pin<&mut impl Future<Output = Result<T>>>) -> Result<T> {
        let Some(_in_flight) = self.runtime.call().filter(|_| !self.inner.closed.load(Ordering::Acquire)) else {
            return Err(engine::closed());
        };
        let deadline = self.deadline()?;
        tokio::select! {
            biased;
            r = work => r,
            () = deadline => Err(engine::timed_out(self.inner.timeout.as_millis() as u64)),
        }
    }

    /// The call timeout, on the store runtime's timer (made only under a call's
    /// [`OwnedRuntime::call`] guard: the runtime outlives it). The caller's own timer would do inside a
    /// tokio runtime built with `enable_time`, but tokio (1.x) offers no way to ask whether the
    /// current runtime has one: `tokio::time::sleep` panics without it. The store's timer works
    /// under any executor and costs the same here: its driver wakes the store's thread, which is
    /// awake for every call anyway (it drives the connection).
    fn deadline(&self) -> Result<tokio::time::Sleep> {
        self.runtime.sleep(self.inner.timeout).ok_or_else(engine::closed)
    }

    /// Deletes every key the deterministic-replay mode has persisted (none in normal mode).
    pub fn clear_replayed_blocking(&self) -> Result<()> {
        let inner = self.inner.clone();
        block_on(&self.runtime, async move {
            let Some(book) = &inner.replay else { return Ok(()) };
            let mut book = book.lock().await;
            let keys = book.take_keys();
            if keys.is_empty() {
                return Ok(());
            }
            let router = inner.conn()?;
            inner.bounded(async move { router.delete(keys).await }).await
        })
    }

    /// A sync call: routed on the caller's thread over a pooled blocking connection (the store's
    /// own, which reads again after a signal: no signals held), else (deterministic replay)
    /// handed to the store's runtime and waited for.
    fn block_call(&self, call: ScriptCall, now: Now) -> Result<Outcome> {
        if self.inner.replay.is_none() {
            if self.inner.closed.load(Ordering::Acquire) {
                return Err(engine::closed());
            }
            return self.inner.router.run_blocking(self.inner.invoke, self.inner.durable, &call);
        }
        let inner = self.inner.clone();
        block_on(&self.runtime, async move { inner.bounded(inner.replayed(&call, now)).await })
    }

    /// Sends one raw command (tests and tools: `PING`, `SCRIPT FLUSH`, `DBSIZE`, ...), under the
    /// same timeout as every call. On a cluster it goes to the master of its key's slot: the
    /// first argument (`GET k`, `HGET h f`), a script call's first key (`EVALSHA sha 1 k`,
    /// `EVAL`, `FCALL`), the key after `OBJECT`'s, `MEMORY USAGE`'s or `XINFO`'s subcommand; a
    /// keyless command reaches one master. It follows `MOVED` and `ASK` (answered before
    /// anything runs), and is never sent again once it may have reached a server. A server's
    /// error reply is [`Value::Error`].
    pub fn command_blocking(&self, args: &[&str]) -> Result<Value> {
        let mut cmd = engine::value::Args::new();
        args.iter().for_each(|a| {
            cmd.arg(*a);
        });
        let inner = self.inner.clone();
        block_on(&self.runtime, async move {
            let router = inner.conn()?;
            inner.bounded(async move { router.raw(&cmd).await }).await
        })
    }
}

impl Inner {
    async fn connect(options: RedisOptions) -> Result<Inner> {
        let timeout = Duration::from_millis(options.timeout_ms.max(1));
        let plan = options.plan()?;
        let router = cluster::Router::connect(&plan, timeout).await?;
        let invoke = choose_invoke(&router, options.scripting, timeout).await?;
        // Under Sentinel, the master found at connect; else the one node or the first seed.
        let info = match plan.mode {
            RedisMode::Sentinel => router.first_endpoint().unwrap_or_else(|| plan.nodes[0].clone()),
            _ => plan.nodes[0].clone(),
        };
        Ok(Inner {
            router,
            durable: plan.durable,
            invoke,
            bound: parking_lot::RwLock::new(Vec::new()),
            any_bound: AtomicBool::new(false),
            auto_bind: AtomicBool::new(true),
            info,
            timeout,
            replay: options.deterministic_replay.then(|| tokio::sync::Mutex::new(replay::Book::default())),
            closed: AtomicBool::new(false),
        })
    }

    /// The router, unless the store is closed.
    fn conn(&self) -> Result<Arc<cluster::Router>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(engine::closed());
        }
        Ok(self.router.clone())
    }

    /// `fut` under the call timeout.
    async fn bounded<T>(&self, fut: impl Future<Output = Result<T>>) -> Result<T> {
        engine::within(self.timeout, fut).await
    }

    /// `call` in deterministic-replay mode: its rounds, one call at a time ([`replay`]). The
    /// caller bounds it by the call timeout.
    async fn replayed(&self, call: &ScriptCall, now: Now) -> Result<Outcome> {
        let Some(book) = &self.replay else { return Err(Error::store("no deterministic replay on this store")) };
        let Now::At(t) = now else {
            return Err(Error::not_implemented("the server clock in deterministic replay mode"));
        };
        let router = self.conn()?;
        let mut book = book.lock().await;
        replay::run(&mut book, &router, call, t).await
    }

    /// `DEL key` (and the replay book forgets it); the caller bounds it by the call timeout.
    async fn reset(&self, key: &str) -> Result<()> {
        let router = self.conn()?;
        let mut book = match &self.replay {
            Some(b) => Some(b.lock().await),
            None => None,
        };
        let mut del = engine::value::Args::new();
        del.arg("DEL").arg(key);
        router.keyed(key.as_bytes(), &del).await?;
        if let Some(book) = book.as_mut() {
            book.forget(key);
        }
        Ok(())
    }
}

/// Functions or scripts: `eval` as asked; otherwise `FUNCTION LOAD` the library (on every
/// master of a cluster), and use functions if the server took it. A server that refuses
/// (Redis < 7, or an ACL without `function|load`) means scripts under `auto`, and a
/// `store_unavailable` naming the refusal under `functions`.
async fn choose_invoke(
    router: &Arc<cluster::Router>,
    scripting: Scripting,
    timeout: Duration,
) -> Result<engine::Invoke> {
    if scripting == Scripting::Eval {
        return Ok(engine::Invoke::Scripts);
    }
    let loaded = match engine::within(timeout, router.everywhere(&load_library())).await {
        Ok(Value::Error(e)) => Err(e),
        Ok(_) => Ok(()),
        Err(e) => Err(e.message().to_string()),
    };
    match (loaded, scripting) {
        (Ok(()), _) => Ok(engine::Invoke::Functions),
        (Err(_), Scripting::Auto) => Ok(engine::Invoke::Scripts),
        (Err(e), _) => Err(Error::store(format!("the server refused FUNCTION LOAD (scripting = functions): {e}"))),
    }
}

/// `FUNCTION LOAD REPLACE <library>` ([`scripts::Library::load_command`]).
fn load_library() -> engine::value::Args {
    let mut c = engine::value::Args::new();
    scripts::LIBRARY.load_command().into_iter().for_each(|a| {
        c.arg(a);
    });
    c
}

impl Store for RedisStore {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>> {
        let call = call::single(key, now, &transform);
        Box::pin(async move { self.call(&call, &now).await?.into_single() })
    }

    fn apply_sync(&self, key: &str, now: Now, transform: Transform<'_>) -> Result<Reply> {
        self.block_call(call::single(key, now, &transform), now)?.into_single()
    }

    fn apply_multi<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiReply>> {
        let call = call::multi(rule, dims, now);
        Box::pin(async move { self.call(&call, &now).await?.into_multi() })
    }

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> Result<MultiReply> {
        self.block_call(call::multi(rule, dims, now), now)?.into_multi()
    }

    fn apply_multi_lease<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        leases: &'a [DimensionLease],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiGrant>> {
        let call = call::multi_lease(rule, dims, leases, now);
        Box::pin(async move { self.call(&call, &now).await?.into_multi_grant() })
    }

    fn apply_multi_lease_sync(
        &self,
        rule: Rule,
        dims: &[DimensionCall<'_>],
        leases: &[DimensionLease],
        now: Now,
    ) -> Result<MultiGrant> {
        self.block_call(call::multi_lease(rule, dims, leases, now), now)?.into_multi_grant()
    }

    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.timed(pin!(self.inner.reset(key))).await })
    }

    fn reset_sync(&self, key: &str) -> Result<()> {
        let inner = self.inner.clone();
        let key = key.to_string();
        block_on(&self.runtime, async move { inner.bounded(inner.reset(&key)).await })
    }

    /// The sync methods are available (they block on the store's runtime).
    fn is_sync(&self) -> bool {
        true
    }

    /// Releases every connection at once: the router's to its node, the Sentinel master or
    /// every cluster node (blocking, shared and each bound runtime's); and the store's runtime
    /// (its thread
    /// and descriptors), at once or when the last async call in flight ends. A call in flight
    /// keeps its own handle until it answers; every later call fails with `store_unavailable`.
    fn close(&self) -> BoxFuture<'_, Result<()>> {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.router.close();
        // Its thread and descriptors too, now or when the last async call in flight ends
        // ([`runtime`]).
        self.runtime.close();
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::{Now, RedisStore, ScriptCall};

    /// The size of the future `f` returns, without calling it.
    fn future_size<'a, F: Future>(_: impl FnOnce(&'a RedisStore, &'a ScriptCall, &'a Now) -> F) -> usize {
        size_of::<F>()
    }

    /// What every async call allocates (the [`crate::store::Store`] methods box
    /// [`RedisStore::call`]'s future with the prepared call, its `now` and the store) stays within
    /// jemalloc's 896-byte class, which keeps 64 per thread cached and 32 per slab: at 2,936
    /// bytes (the 3 KB class: 20 cached, 4 per slab) serve's 32 requests in flight per gRPC
    /// thread went past the thread's cache every round, about 1 µs of CPU a request at two
    /// connections (`docs/serve.md`, "Where the time goes"). glibc's per-thread cache stops at
    /// 1,032 bytes too.
    #[test]
    fn an_async_calls_boxed_future_fits_the_896_byte_class() {
        let boxed = future_size(RedisStore::call) + size_of::<ScriptCall>() + size_of::<Now>() + 2 * size_of::<usize>();
        assert!(boxed <= 896, "an async call's boxed future is about {boxed} bytes");
    }
}
