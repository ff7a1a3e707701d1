//! Multi-dimensional limits: several named dimensions (per IP, per user, per route), each with
//! its own strategy, decided together under [`Rule::All`] or [`Rule::Any`].
//!
//! Every dimension is evaluated at the same instant first; only then does the rule decide what
//! commits, so no budget leaks when one dimension denies (`all`), and only the dimensions that
//! allowed pay (`any`). The returned decision is the binding dimension's, so headers and logs
//! name the real limit.

use std::sync::Arc;

use crate::clock::{Clock, SystemClock};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::key;
use crate::lease::multi::MultiTier;
use crate::lease::{Mode, TierStats};
use crate::limiter::FailPolicy;
use crate::metrics::{LimiterMetrics, StoreTimer};
use crate::store::{DimensionCall, MemoryStore, MultiReply, Now, Rule, Store};
use crate::strategy::Strategy;
use crate::validate;

mod tiered;

/// Which dimensions commit under `rule`, given every dimension's decision: `(admitted, mask)`.
///
/// `all`: admitted iff every dimension allows; then every dimension commits, else none.
/// `any`: admitted iff one allows; only the allowing dimensions commit.
pub fn commit_set(rule: Rule, decisions: &[Decision]) -> (bool, Vec<bool>) {
    match rule {
        Rule::All => {
            let admitted = decisions.iter().all(|d| d.allowed);
            (admitted, vec![admitted; decisions.len()])
        }
        Rule::Any => (decisions.iter().any(|d| d.allowed), decisions.iter().map(|d| d.allowed).collect()),
    }
}

/// The index of the binding dimension. Ties go to the first in declaration order.
///
/// `all` allowed → smallest `remaining`; `all` denied → the denier with the largest
/// `retryAfterMs`. `any` allowed → the allower with the largest `remaining`; `any` denied →
/// smallest `retryAfterMs`.
pub fn binding(rule: Rule, admitted: bool, decisions: &[Decision]) -> usize {
    let mut best: Option<usize> = None;
    for (i, d) in decisions.iter().enumerate() {
        let better = match best.map(|b| &decisions[b]) {
            None => match (rule, admitted) {
                (Rule::All, false) | (Rule::Any, true) => d.allowed == admitted,
                _ => true,
            },
            Some(b) => match (rule, admitted) {
                (Rule::All, true) => d.remaining < b.remaining,
                (Rule::All, false) => !d.allowed && d.retry_after_ms > b.retry_after_ms,
                (Rule::Any, true) => d.allowed && d.remaining > b.remaining,
                (Rule::Any, false) => d.retry_after_ms < b.retry_after_ms,
            },
        };
        if better {
            best = Some(i);
        }
    }
    best.unwrap_or(0)
}

/// The representative decision of a multi apply: the binding dimension's, with
/// `retry_after_ms = 0` when admitted.
pub fn representative(rule: Rule, reply: &MultiReply) -> (usize, Decision) {
    let i = binding(rule, reply.allowed, &reply.decisions);
    let mut d = reply.decisions[i];
    d.allowed = reply.allowed;
    if reply.allowed {
        d.retry_after_ms = 0;
    }
    (i, d)
}

/// The fail policy's answer for a multi call over `dimensions` dimensions that its store could
/// not decide: the policy's decision at the first dimension's `limit` (the binding one), the
/// same for every dimension (docs/semantics.md, "When the store fails"). `Err` under `Raise`,
/// and for an error that is not `store_unavailable`.
pub fn fallback_reply(policy: FailPolicy, err: Error, limit: i64, dimensions: usize, now: i64) -> Result<MultiReply> {
    let d = policy.fallback(err, limit, now)?;
    Ok(MultiReply { allowed: d.allowed, decisions: vec![d; dimensions] })
}

/// One fused apply of `calls` under `rule` at `now` (one round trip on Redis), timed into
/// `metrics` when given, a `store_unavailable` error answered by `policy` ([`fallback_reply`],
/// at `now` or, for the server's clock, at `clock`'s reading); a fallback's decisions carry
/// `fallback: true`. Every strict check of a [`MultiLimiter`] runs through it, and so does a
/// caller whose dimensions come from matching each request instead of a declaration (serve's
/// descriptors): the calls differ, the rules of the apply do not.
pub async fn apply_calls(
    store: &dyn Store,
    rule: Rule,
    calls: &[DimensionCall<'_>],
    now: Now,
    clock: &dyn Clock,
    policy: FailPolicy,
    metrics: Option<&LimiterMetrics>,
) -> Result<MultiReply> {
    let timer = StoreTimer::start(metrics, store);
    let reply = store.apply_multi(rule, calls, now).await;
    timer.stop();
    reply.or_else(|e| fallback_reply(policy, e, first_limit(calls), calls.len(), now.fallback_ms(clock)))
}

/// [`apply_calls`] without an await (the store's blocking path).
pub fn apply_calls_sync(
    store: &dyn Store,
    rule: Rule,
    calls: &[DimensionCall<'_>],
    now: Now,
    clock: &dyn Clock,
    policy: FailPolicy,
    metrics: Option<&LimiterMetrics>,
) -> Result<MultiReply> {
    let timer = StoreTimer::start(metrics, store);
    let reply = store.apply_multi_sync(rule, calls, now);
    timer.stop();
    reply.or_else(|e| fallback_reply(policy, e, first_limit(calls), calls.len(), now.fallback_ms(clock)))
}

/// The limit a multi call's fallback reports: its first dimension's.
fn first_limit(calls: &[DimensionCall<'_>]) -> i64 {
    calls.first().map_or(0, |c| c.strategy.limit())
}

/// One named dimension of a [`MultiLimiter`].
#[derive(Clone, Debug)]
pub struct Dimension {
    /// The dimension's name (part of its keys).
    pub name: String,
    /// Its algorithm.
    pub strategy: Strategy,
    /// Its cost per unit of request cost (integer >= 1, default 1).
    pub cost_multiplier: u64,
}

impl Dimension {
    /// A dimension named `name` with cost multiplier 1.
    pub fn new(name: impl Into<String>, strategy: Strategy) -> Dimension {
        Dimension { name: name.into(), strategy, cost_multiplier: 1 }
    }

    /// Sets the cost multiplier.
    pub fn cost_multiplier(mut self, m: u64) -> Dimension {
        self.cost_multiplier = m;
        self
    }
}

/// The result of a multi-dimensional check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiDecision {
    /// The binding dimension's decision.
    pub decision: Decision,
    /// The binding dimension's name.
    pub binding: String,
    /// Every dimension's own decision, in declaration order.
    pub dimensions: Vec<Decision>,
}

/// Several dimensions decided atomically together.
pub struct MultiLimiter {
    rule: Rule,
    dimensions: Vec<Dimension>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    prefix: String,
    server_clock: bool,
    fail_policy: FailPolicy,
    hash_tag: Option<String>,
    /// `None` unless asked for (see [`MultiLimiter::with_metrics`]).
    metrics: Option<Arc<LimiterMetrics>>,
    /// The two-tier mode's local tier; `None` in strict mode (see [`MultiLimiter::with_mode`]).
    tier: Option<Box<MultiTier>>,
}

impl std::fmt::Debug for MultiLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiLimiter").field("rule", &self.rule).field("dimensions", &self.dimensions).finish()
    }
}

impl MultiLimiter {
    /// A multi limiter over `dimensions` (names unique and non-empty), on a fresh memory store
    /// and the system clock, with the empty prefix.
    pub fn new(rule: Rule, dimensions: Vec<Dimension>) -> Result<MultiLimiter> {
        if dimensions.is_empty() {
            return Err(Error::config("dimensions", "must not be empty"));
        }
        for (i, d) in dimensions.iter().enumerate() {
            if d.name.is_empty() {
                return Err(Error::config("dimensions.name", "must not be empty"));
            }
            if dimensions[..i].iter().any(|o| o.name == d.name) {
                return Err(Error::config("dimensions.name", &format!("{:?} is declared twice", d.name)));
            }
            if d.cost_multiplier == 0 {
                return Err(Error::config("dimensions.costMultiplier", "must be an integer >= 1"));
            }
        }
        Ok(MultiLimiter {
            rule,
            dimensions,
            store: Arc::new(MemoryStore::new()),
            clock: Arc::new(SystemClock),
            prefix: String::new(),
            server_clock: false,
            fail_policy: FailPolicy::Raise,
            hash_tag: None,
            metrics: None,
            tier: None,
        })
    }

    /// Uses `store`.
    pub fn with_store(mut self, store: Arc<dyn Store>) -> MultiLimiter {
        self.store = store;
        self
    }

    /// The clock its calls read (a caller that needs the decision's instant reads it too).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Uses `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> MultiLimiter {
        self.clock = clock;
        self
    }

    /// Namespaces every key under `prefix`.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> MultiLimiter {
        self.prefix = prefix.into();
        self
    }

    /// Reads time from the store's clock (Redis `TIME`) instead of the limiter's.
    pub fn with_server_clock(mut self, on: bool) -> MultiLimiter {
        self.server_clock = on;
        self
    }

    /// Whether it keeps [`LimiterMetrics`] (default: no): each check counts its combined
    /// decision (allowed, denied, or a fail-policy fallback) or its error, and a call to a
    /// store outside the process is timed. Read them with [`MultiLimiter::metrics`].
    pub fn with_metrics(mut self, on: bool) -> MultiLimiter {
        self.metrics = on.then(|| Arc::new(LimiterMetrics::new(&self.prefix)));
        self
    }

    /// The metrics, when it was built with them.
    pub fn metrics(&self) -> Option<&Arc<LimiterMetrics>> {
        self.metrics.as_ref()
    }

    /// Counts a check's outcome when metrics are on.
    fn observe(&self, result: Result<MultiDecision>) -> Result<MultiDecision> {
        if let Some(m) = &self.metrics {
            match &result {
                Ok(d) => m.record_check(&Ok(d.decision)),
                Err(e) => m.record_error(e.code()),
            }
        }
        result
    }

    /// Times a store call (see [`StoreTimer`]).
    fn timer(&self) -> StoreTimer<'_> {
        StoreTimer::start(self.metrics.as_deref(), &*self.store)
    }

    /// What a `store_unavailable` error turns into.
    pub fn with_fail_policy(mut self, policy: FailPolicy) -> MultiLimiter {
        self.fail_policy = policy;
        self
    }

    /// Sets the Redis Cluster hash tag shared by every key of this limiter (default: the
    /// prefix, or `tk` without one). All keys of one request must live in one hash slot for
    /// the fused script to run on a cluster; one tag per limiter means one slot per limiter.
    pub fn with_hash_tag(mut self, tag: impl Into<String>) -> Result<MultiLimiter> {
        let tag = tag.into();
        if tag.is_empty() || tag.contains(['{', '}']) {
            return Err(Error::config("hashTag", "must be non-empty and contain no braces"));
        }
        self.hash_tag = Some(tag);
        Ok(self)
    }

    /// The two-tier mode (default [`Mode::Strict`], see [`crate::lease`] and docs/leasing.md):
    /// `cached_deny` keeps a request's denial until its retry time; `leased` leases credits
    /// per dimension key and admits locally only when every dimension holds credits for the
    /// request. `config_invalid` when the mode does not fit a dimension's strategy, and for
    /// `lease.lowWater` above 0 (a multi limiter leases a dimension when it runs short).
    pub fn with_mode(mut self, mode: Mode) -> Result<MultiLimiter> {
        for d in &self.dimensions {
            mode.validate(&d.strategy)?;
        }
        if let Mode::Leased(o) = mode
            && o.low_water > 0
        {
            return Err(Error::config("lease.lowWater", "must be 0 on a multi limiter"));
        }
        let strategies: Vec<&Strategy> = self.dimensions.iter().map(|d| &d.strategy).collect();
        self.tier = (mode != Mode::Strict).then(|| Box::new(MultiTier::new(mode, self.rule, &strategies)));
        Ok(self)
    }

    /// The two-tier mode.
    pub fn mode(&self) -> Mode {
        self.tier.as_ref().map_or(Mode::Strict, |t| t.mode())
    }

    /// The local tier's counters (all zero in strict mode); `local_admits` and `local_denials`
    /// count requests, `leases` fused lease calls.
    pub fn tier_stats(&self) -> TierStats {
        self.tier.as_ref().map(|t| t.stats()).unwrap_or_default()
    }

    /// The rule.
    pub fn rule(&self) -> Rule {
        self.rule
    }

    /// The dimensions, in declaration order.
    pub fn dimensions(&self) -> &[Dimension] {
        &self.dimensions
    }

    /// The full store key of dimension `name` for the caller's `key`: `prefix:{tag}:name:key`.
    /// The `{tag}` keeps every key of one request in one Redis Cluster hash slot.
    pub fn dimension_key(&self, name: &str, key: &str) -> String {
        let tag = match (&self.hash_tag, self.prefix.as_str()) {
            (Some(t), _) => t.as_str(),
            (None, "") => "tk",
            (None, p) => p,
        };
        key::join(&self.prefix, &format!("{{{tag}}}:{name}:{key}"))
    }

    /// Every dimension's full store key for `keys`, one key per dimension in order (what
    /// [`MultiLimiter::reset`] deletes); a wrong count is `config_invalid`.
    pub fn full_keys(&self, keys: &[&str]) -> Result<Vec<String>> {
        if keys.len() != self.dimensions.len() {
            return Err(Error::config(
                "keys",
                &format!("must give one key per dimension ({} expected, {} given)", self.dimensions.len(), keys.len()),
            ));
        }
        let max = self.store.max_key_length();
        self.dimensions
            .iter()
            .zip(keys)
            .map(|(d, k)| {
                let full = self.dimension_key(&d.name, k);
                // One key-length rule on every store (see `key::check_length`).
                crate::key::check_length(full.len(), max).map(|_| full)
            })
            .collect()
    }

    /// What every check checks before its calls are built (the cost is `calls`'), in one order
    /// (the store's paths and [`MultiLimiter::prepare`] alike): the time, then the keys (one
    /// per dimension, each within the store's length); their full keys.
    fn admit(&self, keys: &[&str], now: Now) -> Result<Vec<String>> {
        // The time once, then each dimension's tick, if it has one (`Strategy::check_now` in two
        // halves: the same errors in the same order as every dimension checking it whole).
        validate::now_at(now)?;
        for d in &self.dimensions {
            d.strategy.check_tick(now)?;
        }
        self.full_keys(keys)
    }

    fn calls<'a>(&'a self, full_keys: &'a [String], cost: u64) -> Result<Vec<DimensionCall<'a>>> {
        validate::cost(cost)?;
        self.dimensions
            .iter()
            .zip(full_keys)
            .map(|(d, k)| {
                let c = cost
                    .checked_mul(d.cost_multiplier)
                    .filter(|c| *c as f64 <= validate::MAX_SAFE_INTEGER)
                    .ok_or_else(|| Error::config("cost", "times the dimension's multiplier must be <= 2^53"))?;
                Ok(DimensionCall { key: k, strategy: &d.strategy, cost: c })
            })
            .collect()
    }

    fn finish_reply(&self, reply: MultiReply) -> MultiDecision {
        let (i, decision) = representative(self.rule, &reply);
        MultiDecision { decision, binding: self.dimensions[i].name.clone(), dimensions: reply.decisions }
    }

    /// The limiter's fail policy's answer to `err` ([`MultiLimiter::fallback_with`]).
    fn fallback(&self, err: Error, now: i64) -> Result<MultiDecision> {
        self.fallback_with(self.fail_policy, err, now)
    }

    /// `policy`'s answer to a check that failed with `err` at `now` ([`fallback_reply`]: the
    /// first dimension's fallback, binding, for every dimension). A caller with a policy of its
    /// own (an HTTP edge's) gets the answer the limiter's own policy would give.
    pub fn fallback_with(&self, policy: FailPolicy, err: Error, now: i64) -> Result<MultiDecision> {
        let limit = self.dimensions[0].strategy.limit();
        let reply = fallback_reply(policy, err, limit, self.dimensions.len(), now)?;
        Ok(self.finish_reply(reply))
    }

    /// The time a call made at local `now` sends: `now`, or `Now::Server` for the store's.
    fn at(&self, now: i64) -> Now {
        if self.server_clock { Now::Server } else { Now::At(now) }
    }

    /// Checks one request: `keys` holds one key per dimension, in declaration order.
    pub fn check_sync(&self, keys: &[&str], cost: u64) -> Result<MultiDecision> {
        self.check_sync_at(keys, cost, self.clock.now_ms())
    }

    /// [`MultiLimiter::check_sync`] at an explicit `now`.
    pub fn check_sync_at(&self, keys: &[&str], cost: u64, now: i64) -> Result<MultiDecision> {
        self.observe(self.check_sync_unobserved(keys, cost, now))
    }

    fn check_sync_unobserved(&self, keys: &[&str], cost: u64, now: i64) -> Result<MultiDecision> {
        let full = self.admit(keys, Now::At(now))?;
        let calls = self.calls(&full, cost)?;
        if let Some(tier) = &self.tier {
            return self.tiered_sync(tier, &full, &calls, cost, now);
        }
        let (at, clock) = (self.at(now), &*self.clock);
        let reply =
            apply_calls_sync(&*self.store, self.rule, &calls, at, clock, self.fail_policy, self.metrics.as_deref())?;
        Ok(self.finish_reply(reply))
    }

    /// Checks one request through the store's async path (Redis: one round trip).
    pub async fn check(&self, keys: &[&str], cost: u64) -> Result<MultiDecision> {
        let now = self.clock.now_ms();
        self.check_at(keys, cost, self.at(now)).await
    }

    /// [`MultiLimiter::check`] at an explicit time.
    pub async fn check_at(&self, keys: &[&str], cost: u64, now: Now) -> Result<MultiDecision> {
        let result = self.check_at_unobserved(keys, cost, now).await;
        self.observe(result)
    }

    async fn check_at_unobserved(&self, keys: &[&str], cost: u64, now: Now) -> Result<MultiDecision> {
        let full = self.admit(keys, now)?;
        let calls = self.calls(&full, cost)?;
        if let Some(tier) = &self.tier {
            return self.tiered_async(tier, &full, &calls, cost, now).await;
        }
        let (store, metrics) = (&*self.store, self.metrics.as_deref());
        let reply = apply_calls(store, self.rule, &calls, now, &*self.clock, self.fail_policy, metrics).await?;
        Ok(self.finish_reply(reply))
    }

    /// Prepares [`MultiLimiter::check`] for a transport other than the store's own
    /// ([`crate::redis::prepared`]: a binding's socket, the REST store): the fused script call
    /// on every dimension's key, at one clock read (or Redis's `TIME` on a server-clock limiter).
    /// A limiter in a tiered mode answers in core: `not_implemented` (call [`MultiLimiter::check`]).
    /// A call refused here is counted (by its error) as [`MultiLimiter::check`] counts it.
    #[cfg(any(feature = "redis", feature = "rest"))]
    pub fn prepare(&self, keys: &[&str], cost: u64) -> Result<crate::redis::prepared::PreparedCall> {
        let now = Now::reading(self.server_clock, &*self.clock);
        let prepared = (|| {
            if self.tier.is_some() {
                return Err(Error::not_implemented("prepare on a multi limiter in a tiered mode (use check)"));
            }
            let full = self.admit(keys, now)?;
            let calls = self.calls(&full, cost)?;
            Ok(crate::redis::prepared::PreparedCall::multi(self.rule, &calls, now))
        })();
        prepared.map_err(|e| crate::metrics::count_error(self.metrics.as_deref(), e))
    }

    /// The decision for a call from [`MultiLimiter::prepare`], from its reply frame or its
    /// transport's error, through the fail policy as [`MultiLimiter::check`] applies it.
    #[cfg(feature = "redis")]
    pub fn finish(&self, call: &crate::redis::transport::PreparedCall, reply: Result<&[u8]>) -> Result<MultiDecision> {
        self.finish_multi(call.multi_reply(reply), call.now())
    }

    /// [`MultiLimiter::finish`] from a decoded reply (or the call's error) to a call from
    /// [`MultiLimiter::prepare`] made at `now`, whichever transport carried it.
    #[cfg(any(feature = "redis", feature = "rest"))]
    pub(crate) fn finish_multi(&self, reply: Result<MultiReply>, now: Now) -> Result<MultiDecision> {
        self.observe(match reply {
            Ok(r) => Ok(self.finish_reply(r)),
            Err(e) => self.fallback(e, now.fallback_ms(&*self.clock)),
        })
    }

    /// Deletes every dimension's state for `keys`.
    pub async fn reset(&self, keys: &[&str]) -> Result<()> {
        for k in self.full_keys(keys)? {
            self.store.reset(&k).await?;
        }
        Ok(())
    }

    /// [`MultiLimiter::reset`] without I/O.
    pub fn reset_sync(&self, keys: &[&str]) -> Result<()> {
        for k in self.full_keys(keys)? {
            self.store.reset_sync(&k)?;
        }
        Ok(())
    }
}
