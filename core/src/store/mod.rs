//! The [`Store`] contract: one atomic read-modify-write of a key, plus housekeeping.
//!
//! A store does not know any algorithm. It is handed a [`Transform`] — a pure transition plus
//! the data a Lua-capable store needs to run the same transition as a script — and applies it
//! atomically with respect to every other apply on the same key, keeping the new state under
//! the TTL the transition asks for. [`MemoryStore`] runs the Rust transition under a shard lock;
//! the Redis store runs the transform's script in one round trip.

use std::future::Future;
use std::pin::Pin;

use crate::algorithms::leaky_bucket::LeakyBucket;
use crate::clock::Clock;
use crate::decision::{Decision, Reservation};
use crate::error::{Error, Result};
use crate::state::{State, Step};
use crate::strategy::Strategy;

pub mod held;
pub mod memory;
mod multi_apply;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod scoped;
pub(crate) mod shard_lock;
#[cfg(any(feature = "postgres", feature = "sqlite"))]
pub mod sql_options;
#[cfg(feature = "sqlite")]
pub mod sqlite;

pub use memory::{MemoryLimits, MemoryStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqliteStore, Synchronous};

/// A boxed, sendable future: the return type of the async store methods (object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The time an apply is evaluated at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Now {
    /// The caller's clock, epoch ms.
    At(i64),
    /// The store's own clock (Redis `TIME`), for fleets whose hosts' clocks disagree.
    Server,
}

impl Now {
    /// The time a call of a limiter (or shaper) sends: `Server` when it uses the store's clock,
    /// else one reading of its own.
    pub fn reading(server_clock: bool, clock: &dyn Clock) -> Now {
        if server_clock { Now::Server } else { Now::At(clock.now_ms()) }
    }

    /// The epoch ms an in-process store (memory, SQLite) decides at: the call's own time, or
    /// the host's wall clock for `Server` (the process is the store's server). A time past
    /// ±2^53 decides as at ±2^53 (`validate::in_domain`): the limiters refuse it first, but a
    /// direct caller of `Store::apply_sync` may not.
    pub fn in_process_ms(self) -> i64 {
        match self {
            Now::At(t) => crate::validate::in_domain(t),
            Now::Server => crate::clock::SystemClock.now_ms(),
        }
    }

    /// The epoch ms a fail policy stamps its fallback with when a call at this time failed: the
    /// call's own time, or `clock`'s when the store's clock was to decide.
    pub fn fallback_ms(self, clock: &dyn Clock) -> i64 {
        match self {
            Now::At(t) => t,
            Now::Server => clock.now_ms(),
        }
    }
}

/// What one atomic apply does to one key.
#[derive(Clone, Copy, Debug)]
pub enum Transform<'a> {
    /// Decide a request of `cost`, consuming it when allowed.
    Check {
        /// The algorithm.
        strategy: &'a Strategy,
        /// Units requested.
        cost: u64,
    },
    /// Decide a request of `cost` without consuming.
    Forecast {
        /// The algorithm.
        strategy: &'a Strategy,
        /// Units requested.
        cost: u64,
    },
    /// Current capacity, without consuming.
    Peek {
        /// The algorithm.
        strategy: &'a Strategy,
    },
    /// Lease credits for the leased mode (`crate::lease`): a check of `cost` plus up to
    /// `want - cost` extra units, granted partially rather than denied while `cost` fits.
    Lease {
        /// The algorithm.
        strategy: &'a Strategy,
        /// The asking request's units.
        cost: u64,
        /// `cost` plus the extra credits asked for.
        want: u64,
        /// How long the credits live (ms), or 0: until the period's reset.
        lifetime_ms: i64,
    },
    /// Give back `units` unspent leased credits of a grant whose period resets at `reset_at`,
    /// where the strategy can take them back (see `crate::lease::grant::give_back`).
    GiveBack {
        /// The algorithm.
        strategy: &'a Strategy,
        /// The units given back.
        units: u64,
        /// The grant's `reset_at`.
        reset_at: i64,
    },
    /// Reserve a shaper departure for `cost` units.
    Reserve {
        /// The shaper.
        shaper: &'a LeakyBucket,
        /// Units requested.
        cost: u64,
    },
}

/// What a [`Transform`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// From `Check`, `Forecast` and `Peek`.
    Decision(Decision),
    /// From `Reserve`.
    Reservation(Reservation),
    /// From `Lease` and `GiveBack`.
    Grant(crate::lease::Grant),
}

impl Reply {
    /// The decision, or `not_implemented` if this was a reservation.
    pub fn decision(self) -> Result<Decision> {
        match self {
            Reply::Decision(d) => Ok(d),
            _ => Err(Error::not_implemented("a decision from a reservation or a grant")),
        }
    }

    /// The reservation, or `not_implemented` if this was a decision.
    pub fn reservation(self) -> Result<Reservation> {
        match self {
            Reply::Reservation(r) => Ok(r),
            _ => Err(Error::not_implemented("a reservation from a decision or a grant")),
        }
    }

    /// The lease grant, or `not_implemented` for any other reply.
    pub fn grant(self) -> Result<crate::lease::Grant> {
        match self {
            Reply::Grant(g) => Ok(g),
            _ => Err(Error::not_implemented("a grant from a decision or a reservation")),
        }
    }
}

impl Transform<'_> {
    /// The pure transition: runs against `slot` at `now`; the TTL is `Some` iff the store must
    /// write the new state (an allowed check, an accepted reservation).
    #[inline]
    pub fn run(&self, slot: &mut Option<State>, now: i64) -> Step<Reply> {
        match *self {
            Transform::Check { strategy, cost } => {
                let step = strategy.check(slot, now, cost, true);
                Step { reply: Reply::Decision(step.reply), ttl_ms: step.ttl_ms }
            }
            Transform::Forecast { strategy, cost } => {
                let step = strategy.check(slot, now, cost, false);
                Step { reply: Reply::Decision(step.reply), ttl_ms: None }
            }
            Transform::Peek { strategy } => {
                Step { reply: Reply::Decision(strategy.peek(slot.as_ref(), now)), ttl_ms: None }
            }
            Transform::Reserve { shaper, cost } => {
                let step = shaper.reserve(slot, now, cost);
                Step { reply: Reply::Reservation(step.reply), ttl_ms: step.ttl_ms }
            }
            Transform::Lease { strategy, cost, want, lifetime_ms } => {
                let step = crate::lease::grant::lease(strategy, slot, now, cost, want, lifetime_ms);
                Step { reply: Reply::Grant(step.reply), ttl_ms: step.ttl_ms }
            }
            Transform::GiveBack { strategy, units, reset_at } => {
                let step = crate::lease::grant::give_back(strategy, slot, now, units, reset_at);
                Step { reply: Reply::Grant(step.reply), ttl_ms: step.ttl_ms }
            }
        }
    }
}

/// How a multi-dimensional limit admits a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Rule {
    /// Every dimension must allow; then all commit, else none does.
    All,
    /// One allowing dimension suffices; only the allowing ones commit.
    Any,
}

/// One dimension of a multi-dimensional apply: its full key, algorithm and cost.
#[derive(Clone, Copy, Debug)]
pub struct DimensionCall<'a> {
    /// The dimension's full store key.
    pub key: &'a str,
    /// The dimension's algorithm.
    pub strategy: &'a Strategy,
    /// The dimension's cost (multiplier × request cost).
    pub cost: u64,
}

/// The outcome of a multi-dimensional apply: every dimension's decision at the same instant
/// (as a check would report it), and whether the rule admitted the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiReply {
    /// One decision per dimension, in declaration order.
    pub decisions: Vec<Decision>,
    /// Whether the request was admitted under the rule.
    pub allowed: bool,
}

/// The lease half of a multi-dimensional lease: per dimension, the units asked for and how
/// long the credits live (the leased mode of [`crate::MultiLimiter`], see `crate::lease`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimensionLease {
    /// The dimension's cost plus the extra credits asked for.
    pub want: u64,
    /// How long the credits live (ms), or 0: until the period's reset.
    pub lifetime_ms: i64,
}

/// The outcome of a multi-dimensional lease: every dimension planned at one instant, committed
/// as the rule admits (a dimension commits the largest of its `want`, the units it still
/// admits, and its cost).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiGrant {
    /// Each dimension's decision at the size it would grant (at its cost when it denies), and
    /// whether the rule admitted the request.
    pub reply: MultiReply,
    /// Per dimension, what it committed: `granted` 0 for a dimension that did not commit.
    pub grants: Vec<crate::lease::Grant>,
}

/// A backend that applies transforms atomically per key.
///
/// Implement [`Store::apply`] (and [`Store::apply_multi`] for multi-dimensional limits) to add
/// a backend; nothing about any algorithm needs to change. Sync methods exist for stores that
/// can answer without I/O; the default implementations return `not_implemented`.
pub trait Store: Send + Sync + 'static {
    /// Atomically applies `transform` to `key` at `now`.
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>>;

    /// [`Store::apply`] without I/O, for in-process stores.
    fn apply_sync(&self, _key: &str, _now: Now, _transform: Transform<'_>) -> Result<Reply> {
        Err(Error::not_implemented("a synchronous apply on this store (use the async methods)"))
    }

    /// Atomically evaluates every dimension at `now` and commits the ones `rule` admits.
    fn apply_multi<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiReply>>;

    /// [`Store::apply_multi`] without I/O, for in-process stores.
    fn apply_multi_sync(&self, _rule: Rule, _dims: &[DimensionCall<'_>], _now: Now) -> Result<MultiReply> {
        Err(Error::not_implemented("a synchronous multi apply on this store (use the async methods)"))
    }

    /// Atomically plans a lease on every dimension at `now` (`leases[i]` for `dims[i]`) and
    /// commits the dimensions `rule` admits, each with the units it grants.
    fn apply_multi_lease<'a>(
        &'a self,
        _rule: Rule,
        _dims: &'a [DimensionCall<'a>],
        _leases: &'a [DimensionLease],
        _now: Now,
    ) -> BoxFuture<'a, Result<MultiGrant>> {
        Box::pin(std::future::ready(Err(Error::not_implemented("a multi-dimensional lease on this store"))))
    }

    /// [`Store::apply_multi_lease`] without I/O.
    fn apply_multi_lease_sync(
        &self,
        _rule: Rule,
        _dims: &[DimensionCall<'_>],
        _leases: &[DimensionLease],
        _now: Now,
    ) -> Result<MultiGrant> {
        Err(Error::not_implemented("a synchronous multi-dimensional lease on this store"))
    }

    /// Deletes `key`'s state.
    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>>;

    /// [`Store::reset`] without I/O.
    fn reset_sync(&self, _key: &str) -> Result<()> {
        Err(Error::not_implemented("a synchronous reset on this store (use the async methods)"))
    }

    /// Whether the sync methods are available.
    fn is_sync(&self) -> bool {
        false
    }

    /// This store as a [`MemoryStore`], if it is one: lets a [`crate::Limiter`] call the memory
    /// store's GCRA check directly (inlined, the decision returned as is) instead of through
    /// [`Store::apply_sync`]'s dynamic call and [`Reply`].
    fn as_memory(&self) -> Option<&MemoryStore> {
        None
    }

    /// The longest full key this store accepts, in bytes ([`crate::key::DEFAULT_MAX_LENGTH`]
    /// unless the store is configured otherwise). Limiters, multi limiters and shapers refuse a
    /// longer key with `config_invalid` before the store sees it, so every store follows one
    /// rule (see [`crate::key::check_length`]).
    fn max_key_length(&self) -> usize {
        crate::key::DEFAULT_MAX_LENGTH
    }

    /// Releases connections. Applies after `close` may fail with `store_unavailable`.
    fn close(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }
}
