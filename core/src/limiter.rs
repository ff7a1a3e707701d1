//! [`Limiter`]: a strategy bound to a store, a clock and a key prefix.

use std::sync::Arc;
use std::time::Instant;

use crate::clock::{Clock, SystemClock};
use crate::decision::Decision;
use crate::error::{Error, ErrorCode, Result};
use crate::key;
use crate::lease::{self, Mode, TierStats};
use crate::metrics::{LimiterMetrics, StoreTimer};
use crate::store::{MemoryStore, Now, Reply, Store, Transform};
use crate::strategy::Strategy;
use crate::validate;

/// What a limiter answers when its store is unavailable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailPolicy {
    /// Deny, with `fallback: true` on the decision (the default for quotas: never over-spend).
    FailClosed,
    /// Allow, with `fallback: true` on the decision (availability over accuracy).
    FailOpen,
    /// Return the `store_unavailable` error (the default otherwise).
    Raise,
}

/// How long a fail-closed decision tells the caller to wait.
pub const FAIL_CLOSED_RETRY_MS: i64 = 1000;

impl FailPolicy {
    /// Parses `"fail_closed"`, `"fail_open"` or `"raise"`.
    pub fn parse(s: &str) -> Result<FailPolicy> {
        match s {
            "fail_closed" => Ok(FailPolicy::FailClosed),
            "fail_open" => Ok(FailPolicy::FailOpen),
            "raise" => Ok(FailPolicy::Raise),
            _ => Err(Error::config("failPolicy", "must be fail_closed, fail_open or raise")),
        }
    }

    /// Turns a store error into the policy's decision; errors other than `store_unavailable`
    /// always pass through.
    pub fn fallback(self, err: Error, limit: i64, now: i64) -> Result<Decision> {
        if err.code() != ErrorCode::StoreUnavailable {
            return Err(err);
        }
        match self {
            FailPolicy::Raise => Err(err),
            FailPolicy::FailOpen => {
                Ok(Decision { allowed: true, limit, remaining: 0, reset_at: now, retry_after_ms: 0, fallback: true })
            }
            FailPolicy::FailClosed => Ok(Decision {
                allowed: false,
                limit,
                remaining: 0,
                reset_at: now.saturating_add(FAIL_CLOSED_RETRY_MS),
                retry_after_ms: FAIL_CLOSED_RETRY_MS,
                fallback: true,
            }),
        }
    }
}

/// A strategy bound to a store, a clock and a key prefix.
///
/// ```
/// use throttlekit::{Limiter, ManualClock, Strategy};
/// use std::sync::Arc;
///
/// let clock = ManualClock::new(1_000);
/// let limiter = Limiter::builder(Strategy::gcra(10, 1_000, Some(2))?)
///     .clock(Arc::new(clock.clone()))
///     .prefix("api")
///     .build();
/// assert!(limiter.check_sync("user:1", 1)?.allowed);
/// assert!(limiter.check_sync("user:1", 1)?.allowed);
/// let third = limiter.check_sync("user:1", 1)?;
/// assert!(!third.allowed);
/// assert_eq!(third.retry_after_ms, 100);
/// clock.advance(100)?;
/// assert!(limiter.check_sync("user:1", 1)?.allowed);
/// # Ok::<(), throttlekit::Error>(())
/// ```
pub struct Limiter {
    strategy: Strategy,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// `clock.is_system_clock()`, asked once: `check_sync` then reads it without a virtual call.
    system_clock: bool,
    prefix: String,
    server_clock: bool,
    fail_policy: FailPolicy,
    /// `None` unless asked for (see [`LimiterBuilder::metrics`]).
    metrics: Option<Arc<LimiterMetrics>>,
    /// The two-tier mode's local tier; `None` in strict mode (see [`crate::lease`]).
    tier: Option<Box<lease::Tier>>,
    /// `store.as_memory()`, asked once (see [`MemoryRef`]).
    memory: Option<MemoryRef>,
}

/// The limiter's store as a [`MemoryStore`], kept beside the `Arc<dyn Store>` it points into.
///
/// Why: asking `store.as_memory()` on every `check_sync` is a virtual call, and with its
/// pointer arithmetic (the `Arc`'s data offset) about 10 of the GCRA hot path's instructions.
struct MemoryRef(std::ptr::NonNull<MemoryStore>);

// SAFETY: a `MemoryRef` is only read as `&MemoryStore`, and `MemoryStore` is `Sync`.
unsafe impl Send for MemoryRef {}
// SAFETY: as above.
unsafe impl Sync for MemoryRef {}

impl MemoryRef {
    fn of(store: &Arc<dyn Store>) -> Option<MemoryRef> {
        store.as_memory().map(|m| MemoryRef(std::ptr::NonNull::from(m)))
    }
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("strategy", self.strategy.spec())
            .field("prefix", &self.prefix)
            .field("server_clock", &self.server_clock)
            .field("fail_policy", &self.fail_policy)
            .finish()
    }
}

/// Configures a [`Limiter`]; defaults: a fresh [`MemoryStore`], [`SystemClock`], no prefix,
/// the caller's clock, and fail-closed for quotas / raise otherwise.
pub struct LimiterBuilder {
    strategy: Strategy,
    store: Option<Arc<dyn Store>>,
    clock: Option<Arc<dyn Clock>>,
    prefix: String,
    server_clock: bool,
    fail_policy: Option<FailPolicy>,
    metrics: bool,
    mode: Mode,
}

impl LimiterBuilder {
    /// The store (shared stores are fine: keys are namespaced by the prefix).
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// The clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The key prefix (`prefix:key`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Whether calls, sync and async, use the store's clock (Redis `TIME`, Postgres
    /// `clock_timestamp()`) instead of the limiter's: the time a store decides at then only moves
    /// forward for each key, whatever order the callers' statements reach it in. An explicit
    /// `now` (`check_sync_at`) still stamps the fail policy's fallback and the local tier.
    pub fn server_clock(mut self, on: bool) -> Self {
        self.server_clock = on;
        self
    }

    /// The policy for `store_unavailable`.
    pub fn fail_policy(mut self, policy: FailPolicy) -> Self {
        self.fail_policy = Some(policy);
        self
    }

    /// Whether the limiter keeps [`LimiterMetrics`] (default: no, and then they cost one
    /// branch a call). Read them with [`Limiter::metrics`].
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// The two-tier mode (default [`Mode::Strict`]); `config_invalid` when it does not fit the
    /// strategy (see [`crate::lease`] and docs/leasing.md).
    pub fn mode(mut self, mode: Mode) -> Result<Self> {
        mode.validate(&self.strategy)?;
        self.mode = mode;
        Ok(self)
    }

    /// Builds the limiter.
    pub fn build(self) -> Limiter {
        let default_policy = if self.strategy.is_quota() { FailPolicy::FailClosed } else { FailPolicy::Raise };
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let store = self.store.unwrap_or_else(|| Arc::new(MemoryStore::new()));
        let metrics = self.metrics.then(|| {
            let stripes = store.as_memory().map_or(0, MemoryStore::shard_count);
            Arc::new(LimiterMetrics::striped(&self.prefix, stripes))
        });
        Limiter {
            memory: MemoryRef::of(&store),
            system_clock: clock.is_system_clock(),
            clock,
            store,
            server_clock: self.server_clock,
            fail_policy: self.fail_policy.unwrap_or(default_policy),
            metrics,
            tier: (self.mode != Mode::Strict).then(|| Box::new(lease::Tier::new(self.mode, &self.strategy))),
            prefix: self.prefix,
            strategy: self.strategy,
        }
    }
}

impl Limiter {
    /// Starts configuring a limiter for `strategy`.
    pub fn builder(strategy: Strategy) -> LimiterBuilder {
        LimiterBuilder {
            strategy,
            store: None,
            clock: None,
            prefix: String::new(),
            server_clock: false,
            fail_policy: None,
            metrics: false,
            mode: Mode::Strict,
        }
    }

    /// A limiter for `strategy` on a fresh memory store and the system clock.
    pub fn new(strategy: Strategy) -> Limiter {
        Limiter::builder(strategy).build()
    }

    /// The strategy.
    pub fn strategy(&self) -> &Strategy {
        &self.strategy
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The fail policy.
    pub fn fail_policy(&self) -> FailPolicy {
        self.fail_policy
    }

    /// The limiter's metrics, when it was built with them.
    pub fn metrics(&self) -> Option<&Arc<LimiterMetrics>> {
        self.metrics.as_ref()
    }

    /// Counts a check's outcome when metrics are on.
    #[inline(always)]
    pub(crate) fn observe(&self, result: Result<Decision>) -> Result<Decision> {
        if let Some(m) = &self.metrics {
            m.record_check(&result);
        }
        result
    }

    /// Counts a call that failed before it reached the store (a check, peek or forecast alike:
    /// an error is counted by its code) when metrics are on.
    pub(crate) fn observe_error(&self, e: Error) -> Error {
        crate::metrics::count_error(self.metrics.as_deref(), e)
    }

    /// Counts a peek's (`forecast == false`) or a forecast's outcome when metrics are on.
    pub(crate) fn observe_read(&self, result: Result<Decision>, forecast: bool) -> Result<Decision> {
        if let Some(m) = &self.metrics {
            if forecast { m.record_forecast(&result) } else { m.record_peek(&result) }
        }
        result
    }

    /// The full store key for `key`.
    pub fn full_key(&self, key: &str) -> String {
        key::join(&self.prefix, key)
    }

    /// Runs `f` on the full store key for `key`, built without allocating.
    #[inline]
    fn with_full_key<R>(&self, key: &str, f: impl FnOnce(&str) -> R) -> R {
        key::with_joined(&self.prefix, key, f)
    }

    /// `config_invalid` when `prefix:key` is longer than the store accepts (one rule for
    /// every store, see [`key::check_length`]).
    #[inline]
    pub(crate) fn check_key_length(&self, key: &str) -> Result<()> {
        key::check_length(key::joined_len(&self.prefix, key), self.store.max_key_length())
    }

    /// What every call of the limiter checks before it reaches a store, in one order: the cost
    /// (of a check or a forecast), the time, the joined key's length. The sync and async paths
    /// and a call prepared for a binding's own transport ([`Limiter::prepare`] in
    /// core/src/redis/transport.rs) all go through it, so each refuses the same calls with the
    /// same error (and the caller counts that error once, as the call's outcome).
    #[inline]
    pub(crate) fn admit(&self, key: &str, now: Now, transform: &Transform<'_>) -> Result<()> {
        if let Transform::Check { cost, .. } | Transform::Forecast { cost, .. } = *transform {
            validate::cost(cost)?;
        }
        self.strategy.check_now(now)?;
        self.check_key_length(key)
    }

    #[inline]
    fn sync_apply(&self, key: &str, now: i64, transform: Transform<'_>) -> Result<Decision> {
        self.admit(key, Now::At(now), &transform)?;
        let at = self.at(now);
        self.with_full_key(key, |full| {
            let reply = match &self.metrics {
                // Only a store that leaves the process is timed (see `metrics`).
                Some(m) if self.store.as_memory().is_none() => {
                    let started = Instant::now();
                    let reply = self.store.apply_sync(full, at, transform);
                    m.record_latency(started.elapsed());
                    reply
                }
                _ => self.store.apply_sync(full, at, transform),
            };
            self.sync_finish(reply, now)
        })
    }

    #[inline]
    fn sync_finish(&self, reply: Result<Reply>, now: i64) -> Result<Decision> {
        match reply {
            Ok(Reply::Decision(d)) => Ok(d),
            Ok(other) => other.decision(),
            // A blocking store (Redis) can be unavailable on the sync path too.
            Err(e) => self.fail_policy.fallback(e, self.strategy.limit(), now),
        }
    }

    async fn async_apply(&self, key: &str, now: Now, transform: Transform<'_>) -> Result<Decision> {
        self.admit(key, now, &transform)?;
        let full = self.full_key(key);
        let timer = StoreTimer::start(self.metrics.as_deref(), &*self.store);
        let reply = self.store.apply(&full, now, transform).await;
        timer.stop();
        match reply.and_then(|r| r.decision()) {
            Ok(d) => Ok(d),
            Err(e) => self.fail_policy.fallback(e, self.strategy.limit(), now.fallback_ms(&*self.clock)),
        }
    }

    /// The time an async call sends: the limiter's clock, or `Now::Server` for the store's.
    pub(crate) fn now(&self) -> Now {
        Now::reading(self.server_clock, &*self.clock)
    }

    /// [`Limiter::now`] with the system clock read directly, never through its ticker thread
    /// (`clock::wall_ms`): for a call that waits for a round trip.
    #[cfg(feature = "postgres")]
    pub(crate) fn now_unticked(&self) -> Now {
        if self.system_clock && !self.server_clock { Now::At(crate::clock::wall_ms()) } else { self.now() }
    }

    /// The time a sync call made at local `now` sends: `now`, or `Now::Server` for the store's.
    pub(crate) fn at(&self, now: i64) -> Now {
        if self.server_clock { Now::Server } else { Now::At(now) }
    }

    /// Checks a request of `cost` for `key` on a sync store (the allocation-free fast path).
    #[inline]
    pub fn check_sync(&self, key: &str, cost: u64) -> Result<Decision> {
        let now = if self.system_clock { SystemClock.now_ms() } else { self.clock.now_ms() };
        self.check_sync_at(key, cost, now)
    }

    /// [`Limiter::check_sync`] at an explicit `now` (epoch ms).
    ///
    /// In the WebAssembly build, which is otherwise compiled for size, this path (with what it
    /// inlines: the memory store's GCRA check, its table probe) is compiled for speed, and kept
    /// out of line: one copy that bindings-wasm's fast path and `check_many_sync` call, where
    /// `#[inline]` had the binding's crate instantiate it again and `check_many_sync` inline a
    /// third copy (6 KB each, docs/edge.md "Size").
    #[cfg_attr(not(target_arch = "wasm32"), inline)]
    #[cfg_attr(target_arch = "wasm32", inline(never), optimize(speed))]
    pub fn check_sync_at(&self, key: &str, cost: u64, now: i64) -> Result<Decision> {
        if cost.wrapping_sub(1) >= validate::MAX_SAFE_INTEGER as u64
            || now.unsigned_abs() > validate::MAX_SAFE_INTEGER as u64
        {
            // Out of 1..=2^53 or ±2^53: the validators build the error (kept off the hot path).
            return self.observe(validate::cost(cost).and_then(|_| validate::now(now)).map(|_| Decision::default()));
        }
        if let Some(tier) = &self.tier {
            return self.observe(lease::check_sync(self, tier, key, cost, now));
        }
        if let (Some(memory), Some(gcra)) = (&self.memory, self.strategy.as_gcra()) {
            // SAFETY: `memory` was taken from `self.store.as_memory()`; it borrows from the
            // store, which `self.store` keeps alive and never hands out mutably.
            let memory = unsafe { memory.0.as_ref() };
            // The hot path: GCRA on the memory store, inlined, the decision returned as is
            // (and counted inside the store, under its shard lock, when metrics are on).
            return match memory.check_gcra_joined(&self.prefix, key, now, gcra, cost, self.metrics.as_deref()) {
                Ok(d) => Ok(d),
                Err(e) => self.observe(Err(e)),
            };
        }
        self.check_sync_other(key, cost, now)
    }

    /// [`Limiter::check_sync_at`] for every strategy and store but GCRA on the memory store: the
    /// sliding-window log on the memory store goes straight into the store's log path, as GCRA
    /// goes into its own (the decisions and stored states of the store call below, without the
    /// `dyn Store` call, the [`Reply`] and the joined key); everything else goes through the
    /// store.
    ///
    /// Out of line on purpose: with a second fast path inlined into `check_sync_at`, the
    /// compiler stopped inlining the GCRA path's table probe (`RawTable::find`), 282 -> 310
    /// instructions a 1-key GCRA check (callgrind; most likely what cost 213605f 4-6 ns,
    /// see docs/performance.md).
    #[inline(never)]
    fn check_sync_other(&self, key: &str, cost: u64, now: i64) -> Result<Decision> {
        if let Some(result) = self.check_log_on_memory(key, cost, now) {
            return result;
        }
        self.observe(self.sync_apply(key, now, Transform::Check { strategy: &self.strategy, cost }))
    }

    /// The sliding-window log's check on the memory store (`None` for any other strategy or
    /// store), as `check_sync_other` and [`Limiter::check_sync_log_inlined`] take it.
    #[inline(always)]
    fn check_log_on_memory(&self, key: &str, cost: u64, now: i64) -> Option<Result<Decision>> {
        let (Some(memory), Some(swl)) = (&self.memory, self.strategy.as_sliding_window_log()) else { return None };
        // SAFETY: as in `check_sync_at`: `memory` points into `self.store`, kept alive by it.
        let memory = unsafe { memory.0.as_ref() };
        Some(self.observe(memory.check_log_joined(&self.prefix, key, now, swl, cost)))
    }

    /// Whether this limiter's checks take the sliding-window log's path on the memory store:
    /// a binding then calls [`Limiter::check_sync_log_inlined`] from a function of its own.
    pub fn is_log_on_memory(&self) -> bool {
        self.memory.is_some() && self.strategy.as_sliding_window_log().is_some() && self.tier.is_none()
    }

    /// [`Limiter::check_sync`], the same decisions for every limiter, with the sliding-window
    /// log's memory-store path inlined into the caller (every other check is
    /// [`Limiter::check_sync_at`]'s).
    ///
    /// For a binding's own out-of-line function for log limiters (`is_log_on_memory`): through
    /// `check_sync`, the log's decision comes back from `check_sync_other` in memory, and the
    /// caller's copy of it read wider than it was written (a stall on store forwarding: with
    /// the one inside the store's log path, 12% of the Python log row's samples in `perf`,
    /// docs/performance.md). Inlined into a function that makes the binding's result object,
    /// the decision goes there without such a copy (the binding reads its fields one by one).
    /// `check_sync` keeps the log path out of line for GCRA's sake (see `check_sync_other`).
    #[doc(hidden)]
    #[inline(always)]
    pub fn check_sync_log_inlined(&self, key: &str, cost: u64) -> Result<Decision> {
        let now = if self.system_clock { SystemClock.now_ms() } else { self.clock.now_ms() };
        // `check_sync_at`'s order: arguments out of range and the tier first.
        if cost.wrapping_sub(1) < validate::MAX_SAFE_INTEGER as u64
            && now.unsigned_abs() <= validate::MAX_SAFE_INTEGER as u64
            && self.tier.is_none()
            && let Some(result) = self.check_log_on_memory(key, cost, now)
        {
            return result;
        }
        self.check_sync_at_out_of_line(key, cost, now)
    }

    /// [`Limiter::check_sync_at`], called: `check_sync_log_inlined`'s way for everything but the
    /// log. Out of line so that a binding that also inlines `check_sync` for GCRA has one copy
    /// of `check_sync_at` to inline, not two (with two, the compiler called it: +32
    /// instructions a Python GCRA check, callgrind).
    #[inline(never)]
    fn check_sync_at_out_of_line(&self, key: &str, cost: u64, now: i64) -> Result<Decision> {
        self.check_sync_at(key, cost, now)
    }

    /// Checks a request of `cost` for `key` through the store (Redis: one round trip).
    pub async fn check(&self, key: &str, cost: u64) -> Result<Decision> {
        if let Some(tier) = &self.tier {
            let result = match validate::cost(cost) {
                Ok(_) => lease::check_async(self, tier, key, cost).await,
                Err(e) => Err(e),
            };
            return self.observe(result);
        }
        self.check_at(key, cost, self.now()).await
    }

    /// A strict check on the sync path (the tier's way to the store).
    pub(crate) fn strict_sync(&self, key: &str, cost: u64, now: i64) -> Result<Decision> {
        self.sync_apply(key, now, Transform::Check { strategy: &self.strategy, cost })
    }

    /// A strict check on the async path.
    pub(crate) async fn strict_async(&self, key: &str, cost: u64) -> Result<Decision> {
        self.async_apply(key, self.now(), Transform::Check { strategy: &self.strategy, cost }).await
    }

    /// The two-tier mode.
    pub fn mode(&self) -> Mode {
        self.tier.as_ref().map_or(Mode::Strict, |t| t.mode())
    }

    /// The local tier's counters (all zero in strict mode).
    pub fn tier_stats(&self) -> TierStats {
        self.tier.as_ref().map(|t| t.stats()).unwrap_or_default()
    }

    /// Gives back the leased credits of keys unused for `idle_ms` (every key: `None`) where the
    /// strategy can take them back; returns the units taken back. `close()` does it for every key.
    pub async fn release_leases(&self, idle_ms: Option<i64>) -> Result<u64> {
        match &self.tier {
            Some(tier) => lease::release(self, tier, idle_ms).await,
            None => Ok(0),
        }
    }

    /// [`Limiter::release_leases`] on the sync path.
    pub fn release_leases_sync(&self, idle_ms: Option<i64>) -> Result<u64> {
        match &self.tier {
            Some(tier) => lease::release_sync(self, tier, idle_ms),
            None => Ok(0),
        }
    }

    /// [`Limiter::check`] at an explicit time.
    pub async fn check_at(&self, key: &str, cost: u64, now: Now) -> Result<Decision> {
        let result = self.async_apply(key, now, Transform::Check { strategy: &self.strategy, cost }).await;
        self.observe(result)
    }

    /// Checks one request of `cost` per key, all at one clock read (not atomic together).
    pub fn check_many_sync(&self, keys: &[&str], cost: u64) -> Result<Vec<Decision>> {
        let now = self.clock.now_ms();
        keys.iter().map(|k| self.check_sync_at(k, cost, now)).collect()
    }

    /// Async [`Limiter::check_many_sync`]; the checks are sent together (pipelined on Redis).
    pub async fn check_many(&self, keys: &[&str], cost: u64) -> Result<Vec<Decision>> {
        validate::cost(cost).map_err(|e| self.observe_error(e))?;
        let now = self.now();
        let checks = keys.iter().map(|k| self.async_apply(k, now, Transform::Check { strategy: &self.strategy, cost }));
        // Every call went out and was decided: each is counted, also those after a failed one
        // (the first error is the answer).
        let mut out = Vec::with_capacity(keys.len());
        let mut failed = None;
        for d in join_all(checks).await {
            match self.observe(d) {
                Ok(d) => out.push(d),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(out), Err)
    }

    /// Current capacity of `key`, without consuming.
    pub fn peek_sync(&self, key: &str) -> Result<Decision> {
        self.peek_sync_at(key, self.clock.now_ms())
    }

    /// [`Limiter::peek_sync`] at an explicit `now`.
    pub fn peek_sync_at(&self, key: &str, now: i64) -> Result<Decision> {
        self.observe_read(self.sync_apply(key, now, Transform::Peek { strategy: &self.strategy }), false)
    }

    /// Async [`Limiter::peek_sync`].
    pub async fn peek(&self, key: &str) -> Result<Decision> {
        self.peek_at(key, self.now()).await
    }

    /// [`Limiter::peek`] at an explicit time.
    pub async fn peek_at(&self, key: &str, now: Now) -> Result<Decision> {
        self.observe_read(self.async_apply(key, now, Transform::Peek { strategy: &self.strategy }).await, false)
    }

    /// The decision a request of `cost` would get now, without consuming.
    pub fn forecast_sync(&self, key: &str, cost: u64) -> Result<Decision> {
        self.forecast_sync_at(key, cost, self.clock.now_ms())
    }

    /// [`Limiter::forecast_sync`] at an explicit `now`.
    pub fn forecast_sync_at(&self, key: &str, cost: u64, now: i64) -> Result<Decision> {
        self.observe_read(self.sync_apply(key, now, Transform::Forecast { strategy: &self.strategy, cost }), true)
    }

    /// Async [`Limiter::forecast_sync`].
    pub async fn forecast(&self, key: &str, cost: u64) -> Result<Decision> {
        self.forecast_at(key, cost, self.now()).await
    }

    /// [`Limiter::forecast`] at an explicit time.
    pub async fn forecast_at(&self, key: &str, cost: u64, now: Now) -> Result<Decision> {
        let result = self.async_apply(key, now, Transform::Forecast { strategy: &self.strategy, cost }).await;
        self.observe_read(result, true)
    }

    /// Forgets `key`'s state.
    pub fn reset_sync(&self, key: &str) -> Result<()> {
        self.check_key_length(key)?;
        self.store.reset_sync(&self.full_key(key))
    }

    /// Async [`Limiter::reset_sync`].
    pub async fn reset(&self, key: &str) -> Result<()> {
        self.check_key_length(key)?;
        self.store.reset(&self.full_key(key)).await
    }

    /// Gives back unspent leased credits (best effort: a store that cannot be reached keeps
    /// them until they expire), then closes the store's connections.
    pub async fn close(&self) -> Result<()> {
        let _ = self.release_leases(None).await;
        self.store.close().await
    }
}

/// Polls every future to completion concurrently; outputs in input order.
pub(crate) async fn join_all<F: std::future::Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut set: Vec<_> = futures.into_iter().map(|f| Some(Box::pin(f))).collect();
    let mut out: Vec<Option<F::Output>> = (0..set.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, slot) in set.iter_mut().enumerate() {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        out[i] = Some(v);
                        *slot = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending { std::task::Poll::Pending } else { std::task::Poll::Ready(()) }
    })
    .await;
    out.into_iter().map(|o| o.expect("every future completed")).collect()
}
