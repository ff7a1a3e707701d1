//! [`RedisStore`]: the distributed [`Store`]. Every decision is one Lua script run atomically on
//! Redis (`lua/`, embedded), so a fleet of processes shares one limit.
//!
//! - **One round trip per decision**: `EVALSHA`, and `EVAL` only when Redis answers `NOSCRIPT`
//!   (a restart or `SCRIPT FLUSH` emptied its cache). A call that timed out is never sent again:
//!   it may already have counted.
//! - **A bounded wait**: every call answers within `timeout_ms` or fails with
//!   `store_unavailable` carrying the cause; the limiter's [`crate::FailPolicy`] then decides.
//!   The connection re-establishes itself in the background after Redis comes back.
//! - **Its own runtime**: the store drives its multiplexed connection on a private tokio runtime,
//!   so its futures can be awaited from any executor (Python's and Node's bindings bring their
//!   own), and its sync methods work from plain threads.
//! - **Clock**: `Now::Server` sends `now = "0"` and the script reads Redis's `TIME`.
//! - **Deterministic replay** (for conformance vectors and the dual-path proof): Redis expires
//!   keys on its wall clock, not the caller's; in this mode the store persists every key and
//!   expires it itself on the caller's clock (see [`replay`]).
//!
//! Keys and state layout are ThrottleKit 1.x's (`shared/SEMANTICS.md`), so mixed fleets share
//! limits. Multi-dimensional checks need all their keys in one hash slot on a cluster:
//! [`crate::MultiLimiter`] builds them as `prefix:{tag}:name:key`.

mod call;
mod replay;
mod scoped;
pub mod scripts;

pub use scoped::{ScopedStore, conformance_stores};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Value};
use tokio::runtime::Runtime;

use crate::error::{Error, Result};
use crate::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Rule, Store, Transform};
use call::{Outcome, ScriptCall};

/// How to reach Redis and how to behave.
#[derive(Clone, Debug)]
pub struct RedisOptions {
    /// `redis://host:port/db` (or `rediss://`, `redis+unix://`).
    pub url: String,
    /// Longest wait for any one call (connecting included), in ms; past it the call fails with
    /// `store_unavailable`. Default 1000.
    pub timeout_ms: u64,
    /// Expire keys on the caller's clock instead of Redis's (conformance replay and tests only:
    /// it serialises every call and costs extra commands).
    pub deterministic_replay: bool,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions { url: "redis://127.0.0.1:6379".to_string(), timeout_ms: 1000, deterministic_replay: false }
    }
}

thread_local! {
    /// Set on the store runtime's own threads, where blocking on the runtime would deadlock.
    static ON_STORE_RUNTIME: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The connection and everything a call needs, shared with the tasks on the store's runtime.
struct Inner {
    conn: ConnectionManager,
    /// Blocking connections for the sync methods: a sync call does its own write and read on
    /// the calling thread, with no hop through the runtime (that hop costs ~40% of a
    /// sequential round trip). A connection that failed or timed out is dropped, never reused,
    /// so a late reply cannot be mistaken for the next call's.
    client: redis::Client,
    idle: parking_lot::Mutex<Vec<redis::Connection>>,
    timeout: Duration,
    replay: Option<tokio::sync::Mutex<replay::Book>>,
    closed: AtomicBool,
}

/// Owns the runtime; shuts it down without blocking, so the store may be dropped anywhere
/// (dropping a tokio runtime inside another runtime's task would otherwise panic).
struct OwnedRuntime(Option<Runtime>);

impl OwnedRuntime {
    fn get(&self) -> &Runtime {
        self.0.as_ref().expect("the runtime lives as long as the store")
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
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
        .on_thread_start(|| ON_STORE_RUNTIME.with(|f| f.set(true)))
        .enable_all()
        .build()
        .map_err(|e| Error::store(format!("cannot start the Redis store's runtime: {e}")))
}

/// Waits for `fut` on `runtime` from any thread that is not one of the runtime's own: from a
/// plain thread, or from inside another async runtime (blocking that thread, without panicking).
fn block_on<T: Send + 'static>(runtime: &Runtime, fut: impl Future<Output = Result<T>> + Send + 'static) -> Result<T> {
    if ON_STORE_RUNTIME.with(|f| f.get()) {
        return Err(Error::not_implemented(
            "a blocking Redis call from the Redis store's own runtime thread (await the async method)",
        ));
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().map_err(|_| Error::store("the Redis store's runtime stopped"))?
}

impl RedisStore {
    /// Connects (within `timeout_ms`) and returns the store.
    pub async fn connect(options: RedisOptions) -> Result<RedisStore> {
        let runtime = build_runtime()?;
        let opts = options.clone();
        let inner = runtime.spawn(Inner::connect(opts));
        let inner = inner.await.map_err(|e| Error::store(format!("connecting failed: {e}")))??;
        Ok(RedisStore { inner: Arc::new(inner), options, runtime: OwnedRuntime(Some(runtime)) })
    }

    /// [`RedisStore::connect`] for callers without an async runtime.
    pub fn connect_blocking(options: RedisOptions) -> Result<RedisStore> {
        let runtime = build_runtime()?;
        let inner = block_on(&runtime, Inner::connect(options.clone()))?;
        Ok(RedisStore { inner: Arc::new(inner), options, runtime: OwnedRuntime(Some(runtime)) })
    }

    /// The options the store was built with.
    pub fn options(&self) -> &RedisOptions {
        &self.options
    }

    /// Runs `call` on the store's runtime; the returned future may be awaited anywhere.
    fn spawn_call(&self, call: ScriptCall, now: Now) -> impl Future<Output = Result<Outcome>> + Send + 'static {
        let inner = self.inner.clone();
        let handle = self.runtime.get().spawn(async move { inner.run(call, now).await });
        async move { handle.await.map_err(|e| Error::store(format!("the call was abandoned: {e}")))? }
    }

    fn block_call(&self, call: ScriptCall, now: Now) -> Result<Outcome> {
        if self.inner.replay.is_none() {
            return self.inner.run_blocking(&call);
        }
        let inner = self.inner.clone();
        block_on(self.runtime.get(), async move { inner.run(call, now).await })
    }

    /// Deletes every key the deterministic-replay mode has persisted (none in normal mode).
    pub fn clear_replayed_blocking(&self) -> Result<()> {
        let inner = self.inner.clone();
        block_on(self.runtime.get(), async move {
            let Some(book) = &inner.replay else { return Ok(()) };
            let mut book = book.lock().await;
            let keys = book.take_keys();
            if keys.is_empty() {
                return Ok(());
            }
            let mut conn = inner.conn.clone();
            inner
                .bounded(
                    async move { conn.send_packed_command(redis::cmd("DEL").arg(keys)).await.map_err(Error::store) },
                )
                .await?;
            Ok(())
        })
    }

    /// Sends one raw command (tests and tools: `PING`, `SCRIPT FLUSH`, `DBSIZE`, ...), under the
    /// same timeout as every call.
    pub fn command_blocking(&self, cmd: Cmd) -> Result<Value> {
        let inner = self.inner.clone();
        block_on(self.runtime.get(), async move {
            let mut conn = inner.conn.clone();
            inner.bounded(async move { conn.send_packed_command(&cmd).await.map_err(Error::store) }).await
        })
    }
}

fn single(outcome: Outcome) -> Result<Reply> {
    match outcome {
        Outcome::Single(r) => Ok(r),
        Outcome::Multi(_) => Err(Error::store("a multi reply to a single-key call")),
    }
}

fn multi(outcome: Outcome) -> Result<MultiReply> {
    match outcome {
        Outcome::Multi(r) => Ok(r),
        Outcome::Single(_) => Err(Error::store("a single-key reply to a multi call")),
    }
}

impl Inner {
    async fn connect(options: RedisOptions) -> Result<Inner> {
        let timeout = Duration::from_millis(options.timeout_ms.max(1));
        let client = redis::Client::open(options.url.as_str())
            .map_err(|e| Error::config("redis.url", &format!("is not a valid Redis URL: {e}")))?;
        let client_for_sync = client.clone();
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            // Reconnection happens in the background, one quick attempt per failed call, so a
            // call while Redis is down fails fast instead of waiting out a backoff schedule.
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(Duration::from_millis(100));
        let conn = tokio::time::timeout(timeout, ConnectionManager::new_with_config(client, config))
            .await
            .map_err(|_| {
                Error::store(format!("connecting to {} timed out after {} ms", options.url, timeout.as_millis()))
            })?
            .map_err(|e| Error::store(format!("cannot connect to {}: {e}", options.url)))?;
        Ok(Inner {
            conn,
            client: client_for_sync,
            idle: parking_lot::Mutex::new(Vec::new()),
            timeout,
            replay: options.deterministic_replay.then(|| tokio::sync::Mutex::new(replay::Book::default())),
            closed: AtomicBool::new(false),
        })
    }

    /// `fut` under the call timeout.
    async fn bounded<T>(&self, fut: impl Future<Output = Result<T>>) -> Result<T> {
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(r) => r,
            Err(_) => {
                Err(Error::store(format!("timed out: Redis did not answer within {} ms", self.timeout.as_millis())))
            }
        }
    }

    async fn run(&self, call: ScriptCall, now: Now) -> Result<Outcome> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::store("the Redis store is closed"));
        }
        match &self.replay {
            None => self.bounded(async { call::decode(&call, &self.eval(&call).await?).map(|d| d.reply) }).await,
            Some(book) => {
                let Now::At(t) = now else {
                    return Err(Error::not_implemented("the server clock in deterministic replay mode"));
                };
                self.bounded(async {
                    let mut book = book.lock().await;
                    replay::run(&mut book, &mut self.conn.clone(), &call, t).await
                })
                .await
            }
        }
    }

    /// A sync call on a pooled blocking connection: `EVALSHA`, `EVAL` on `NOSCRIPT` only.
    fn run_blocking(&self, call: &ScriptCall) -> Result<Outcome> {
        use redis::ConnectionLike;
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::store("the Redis store is closed"));
        }
        let started = std::time::Instant::now();
        let timed_out = |e: redis::RedisError| {
            if e.is_timeout() || started.elapsed() >= self.timeout {
                Error::store(format!("timed out: Redis did not answer within {} ms ({e})", self.timeout.as_millis()))
            } else {
                Error::store(e)
            }
        };
        let popped = self.idle.lock().pop();
        let mut conn = match popped {
            Some(c) => c,
            None => {
                let c = self.client.get_connection_with_timeout(self.timeout).map_err(timed_out)?;
                c.set_read_timeout(Some(self.timeout)).map_err(Error::store)?;
                c.set_write_timeout(Some(self.timeout)).map_err(Error::store)?;
                c
            }
        };
        let first = conn.req_command(&eval_cmd("EVALSHA", &call.script.sha, call));
        let missing = match &first {
            Ok(Value::ServerError(e)) => e.code() == "NOSCRIPT",
            Err(e) => e.code() == Some("NOSCRIPT"),
            Ok(_) => false,
        };
        let reply = if missing { conn.req_command(&eval_cmd("EVAL", &call.script.source, call)) } else { first };
        let value = match reply {
            Ok(Value::ServerError(e)) => {
                self.idle.lock().push(conn);
                return Err(Error::store(format!("{} failed: {e}", call.script.name)));
            }
            Ok(v) => v,
            // Dropped with the connection: a timed-out call is never sent again.
            Err(e) => return Err(timed_out(e)),
        };
        self.idle.lock().push(conn);
        call::decode(call, &value).map(|d| d.reply)
    }

    /// `EVALSHA`; on `NOSCRIPT` only, `EVAL` (which also caches the script again).
    async fn eval(&self, call: &ScriptCall) -> Result<Value> {
        let mut conn = self.conn.clone();
        let sha = eval_cmd("EVALSHA", &call.script.sha, call);
        let first = conn.send_packed_command(&sha).await;
        let missing = match &first {
            Ok(Value::ServerError(e)) => e.code() == "NOSCRIPT",
            Err(e) => e.code() == Some("NOSCRIPT"),
            Ok(_) => false,
        };
        let reply = if missing {
            let full = eval_cmd("EVAL", &call.script.source, call);
            conn.send_packed_command(&full).await
        } else {
            first
        };
        match reply {
            Ok(Value::ServerError(e)) => Err(Error::store(format!("{} failed: {e}", call.script.name))),
            r => r.map_err(Error::store),
        }
    }

    async fn reset(&self, key: String) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::store("the Redis store is closed"));
        }
        self.bounded(async {
            let mut book = match &self.replay {
                Some(b) => Some(b.lock().await),
                None => None,
            };
            let mut conn = self.conn.clone();
            conn.send_packed_command(redis::cmd("DEL").arg(&key)).await.map_err(Error::store)?;
            if let Some(book) = book.as_mut() {
                book.forget(&key);
            }
            Ok(())
        })
        .await
    }
}

/// `EVAL`/`EVALSHA` `script` with the call's keys and arguments.
fn eval_cmd(verb: &str, script: &str, call: &ScriptCall) -> Cmd {
    let mut c = redis::cmd(verb);
    c.arg(script).arg(call.keys.len()).arg(&call.keys).arg(&call.args);
    c
}

impl Store for RedisStore {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>> {
        let fut = self.spawn_call(call::single(key, now, &transform), now);
        Box::pin(async move { single(fut.await?) })
    }

    fn apply_sync(&self, key: &str, now: i64, transform: Transform<'_>) -> Result<Reply> {
        let now = Now::At(now);
        single(self.block_call(call::single(key, now, &transform), now)?)
    }

    fn apply_multi<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiReply>> {
        let fut = self.spawn_call(call::multi(rule, dims, now), now);
        Box::pin(async move { multi(fut.await?) })
    }

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: i64) -> Result<MultiReply> {
        let now = Now::At(now);
        multi(self.block_call(call::multi(rule, dims, now), now)?)
    }

    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        let inner = self.inner.clone();
        let key = key.to_string();
        let handle = self.runtime.get().spawn(async move { inner.reset(key).await });
        Box::pin(async move { handle.await.map_err(|e| Error::store(format!("the call was abandoned: {e}")))? })
    }

    fn reset_sync(&self, key: &str) -> Result<()> {
        let inner = self.inner.clone();
        let key = key.to_string();
        block_on(self.runtime.get(), async move { inner.reset(key).await })
    }

    /// The sync methods are available (they block on the store's runtime).
    fn is_sync(&self) -> bool {
        true
    }

    fn close(&self) -> BoxFuture<'_, Result<()>> {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.idle.lock().clear();
        Box::pin(std::future::ready(Ok(())))
    }
}
