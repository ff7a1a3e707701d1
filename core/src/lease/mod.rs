//! Hot keys: the two-tier modes. A [`crate::Limiter`] in a mode other than [`Mode::Strict`]
//! keeps a small node-local tier in front of its store.
//!
//! - [`Mode::Strict`]: every decision is one store apply (one Redis round trip). The default.
//! - [`Mode::CachedDeny`]: a denial is kept locally until its `retry_after_ms` (measured from
//!   the moment the call was *sent*, so never later than the store would say) and answered
//!   without the store for any request at least as large. Exact: it never admits more.
//! - [`Mode::Leased`]: a node takes up to `batch` units in one apply (`core/lua/lease.lua`, or
//!   [`grant::lease`] in memory), admits the asking request and keeps the rest as credits that
//!   it spends locally. Every credit is counted in the store when leased, so over-admission is
//!   bounded by the credits the fleet holds: at most `N·(batch − 1)` beyond the strategy's own
//!   bound (`docs/leasing.md`), and none when credits are coupled to a fixed window's reset.
//!
//! Gaps of the original two-tier design that this one closes (issue #23): the lease carries its
//! expiry as a duration on the store's clock, which the node adds to the instant it sent the
//! request (so credits never outlive the store's window, whatever the node's clock says); a
//! grant whose reply lands after that expiry is dropped; a failed lease never admits through
//! credits it does not have (fail-open's admissions are marked `fallback` and are the only
//! ones outside the bound); unspent credits go back to the store on `close()`, on
//! [`crate::Limiter::release_leases`] and when the tier evicts a key, wherever the strategy can
//! take them back exactly.
//!
//! `model.rs` (tests only) is the `stateright` model of these transitions; each of its actions
//! names the function here or in `core/lua/lease.lua` it stands for.

pub mod grant;
#[cfg(test)]
mod model;
pub(crate) mod multi;
pub(crate) mod tier;

pub use tier::TierStats;
pub(crate) use tier::{Tier, check_async, check_sync, release, release_sync};

use crate::error::{Error, Result};
use crate::strategy::Strategy;

/// A tier's map by key (its credits, its cached denials). The WebAssembly build hashes the keys
/// with foldhash's fixed-seed hasher, as the memory store does, instead of std's SipHash, which
/// these maps would bring into the module; the native builds keep std's hasher.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) type KeyMap<V> = std::collections::HashMap<String, V>;
#[cfg(target_arch = "wasm32")]
pub(crate) type KeyMap<V> = std::collections::HashMap<String, V, foldhash::fast::FixedState>;

/// How many keys a tier remembers by default (credits or a cached denial per key).
pub const DEFAULT_MAX_KEYS: usize = 10_000;

/// A limiter's two-tier mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Every decision asks the store (today's behaviour).
    #[default]
    Strict,
    /// Denials are answered locally until their retry time.
    CachedDeny {
        /// Keys whose denial is remembered (the oldest are forgotten first).
        max_keys: usize,
    },
    /// Credits are leased in batches and spent locally.
    Leased(LeaseOptions),
}

/// The leased mode's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseOptions {
    /// Units asked for per lease (the asking request's included). `>= 1`; 1 is strict.
    pub batch: u64,
    /// Refill when a spend leaves this many credits or fewer (0: only when they run out).
    /// The refill is made by the request that crossed it, after its own decision.
    pub low_water: u64,
    /// Credits expire at the fixed window's (or quota period's) reset: exactly `limit` per
    /// window. Fixed window and fixed/calendar quotas only (those quotas are always coupled).
    pub window_coupled: bool,
    /// Keys the tier holds credits for at once.
    pub max_keys: usize,
}

impl Default for LeaseOptions {
    fn default() -> LeaseOptions {
        LeaseOptions { batch: 100, low_water: 0, window_coupled: false, max_keys: DEFAULT_MAX_KEYS }
    }
}

/// What the store answers a lease (`lease.lua`'s reply; [`grant::lease`] in memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grant {
    /// Units granted, the asking request's included; 0 = denied.
    pub granted: u64,
    /// The strategy's reported limit.
    pub limit: i64,
    /// The decision's `reset_at` on the store's clock (a coupled lease's period end).
    pub reset_at: i64,
    /// Denied: how long until the asking request could pass.
    pub retry_after_ms: i64,
    /// How long the credits live, on the store's clock, from the moment it granted them.
    pub expires_in_ms: i64,
}

impl LeaseOptions {
    /// The options from a binding's loose fields (numbers as the host language holds them; a
    /// missing one takes its default): `config_invalid` naming `lease.<field>` for a value that
    /// is not an integer in range.
    pub fn from_fields(
        batch: Option<f64>,
        low_water: Option<f64>,
        window_coupled: Option<bool>,
        max_keys: Option<f64>,
    ) -> Result<LeaseOptions> {
        use crate::validate::integer_in;
        let max = crate::validate::MAX_SAFE_INTEGER;
        let d = LeaseOptions::default();
        Ok(LeaseOptions {
            batch: batch.map(|v| integer_in("lease.batch", v, 1.0, max)).transpose()?.map_or(d.batch, |v| v as u64),
            low_water: low_water
                .map(|v| integer_in("lease.lowWater", v, 0.0, max))
                .transpose()?
                .map_or(d.low_water, |v| v as u64),
            window_coupled: window_coupled.unwrap_or(d.window_coupled),
            max_keys: max_keys
                .map(|v| integer_in("lease.maxKeys", v, 1.0, (u32::MAX) as f64))
                .transpose()?
                .map_or(d.max_keys, |v| v as usize),
        })
    }
}

impl Mode {
    /// `strict`, `cached_deny` (or `cached-deny`) or `leased`; `options` serve the latter two.
    pub fn parse(name: &str, options: LeaseOptions) -> Result<Mode> {
        match name {
            "strict" => Ok(Mode::Strict),
            "cached_deny" | "cached-deny" | "cachedDeny" => Ok(Mode::CachedDeny { max_keys: options.max_keys }),
            "leased" => Ok(Mode::Leased(options)),
            _ => Err(Error::config("mode", "must be strict, cached_deny or leased")),
        }
    }

    /// The mode's name as [`Mode::parse`] reads it.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Strict => "strict",
            Mode::CachedDeny { .. } => "cached_deny",
            Mode::Leased(_) => "leased",
        }
    }

    /// `config_invalid` naming the field when the mode does not fit `strategy`.
    pub fn validate(&self, strategy: &Strategy) -> Result<()> {
        let max_keys = match self {
            Mode::Strict => return Ok(()),
            Mode::CachedDeny { max_keys } => *max_keys,
            Mode::Leased(o) => {
                if o.batch == 0 || o.batch > crate::validate::MAX_SAFE_INTEGER as u64 {
                    return Err(Error::config("lease.batch", "must be an integer in 1..=2^53"));
                }
                if o.low_water >= o.batch {
                    return Err(Error::config("lease.lowWater", "must be below lease.batch"));
                }
                if o.window_coupled && !grant::coupled_kind(strategy) {
                    return Err(Error::config(
                        "lease.windowCoupled",
                        "applies to fixedWindow and fixed or calendar quotas only (other kinds have no reset to couple to)",
                    ));
                }
                o.max_keys
            }
        };
        if max_keys == 0 {
            return Err(Error::config("lease.maxKeys", "must be at least 1"));
        }
        Ok(())
    }
}
