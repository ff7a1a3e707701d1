//! Multi-dimensional limits: `Dimension`, `Rule` and `MultiLimiter`.

use std::sync::Arc;

use crate::clock::{self, ManualClock};
use crate::convert::refs;
use crate::error::{Result, ThrottleKitError};
use crate::records::MultiDecision;
use crate::store::{FailPolicy, Resolved, Store};
use crate::strategy::Strategy;

/// How a multi limiter combines its dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum Rule {
    /// Admitted only if every dimension allows; then all commit, else none does.
    All,
    /// Admitted if one dimension allows; only the allowing dimensions commit.
    Any,
}

impl From<Rule> for throttlekit::Rule {
    fn from(r: Rule) -> Self {
        match r {
            Rule::All => throttlekit::Rule::All,
            Rule::Any => throttlekit::Rule::Any,
        }
    }
}

/// One named dimension of a `MultiLimiter`: its strategy and how many of its units one unit of
/// request cost spends.
#[derive(uniffi::Record)]
pub struct Dimension {
    /// The name (part of the dimension's keys).
    pub name: String,
    /// The strategy.
    pub strategy: Arc<Strategy>,
    /// Units of this dimension per unit of request cost (>= 1).
    #[uniffi(default = 1)]
    pub cost_multiplier: i64,
}

/// How a multi limiter is built. Every field is optional.
#[derive(uniffi::Record)]
pub struct MultiLimiterOptions {
    /// The store (`null`: a fresh `MemoryStore` of its own).
    #[uniffi(default = None)]
    pub store: Option<Store>,
    /// A manual clock (`null`: the system clock).
    #[uniffi(default = None)]
    pub clock: Option<Arc<ManualClock>>,
    /// Keys are stored under this prefix (`""`: none).
    #[uniffi(default = "")]
    pub prefix: String,
    /// Read time from Redis instead of this host (`null`: the store's default).
    #[uniffi(default = None)]
    pub server_clock: Option<bool>,
    /// What to answer when the store cannot (`null`: the store's default).
    #[uniffi(default = None)]
    pub fail_policy: Option<FailPolicy>,
    /// Puts every key of this limiter in one Redis Cluster hash slot (`null`: the prefix, or
    /// `tk`); the fused script needs one slot per request.
    #[uniffi(default = None)]
    pub hash_tag: Option<String>,
    /// Keep counters of its checks (their combined decisions), read with `metrics()`.
    #[uniffi(default = false)]
    pub metrics: bool,
    /// The two-tier mode, as in `LimiterOptions`: `"strict"`, `"cached_deny"` or `"leased"`
    /// (`nil`: `"leased"` when `lease` is given, else `"strict"`); credits are held per
    /// dimension key (docs/leasing.md, "Multi limiters").
    #[uniffi(default = None)]
    pub mode: Option<String>,
    /// The leased mode's options (`nil`: core's defaults); `low_water` must be 0 here.
    #[uniffi(default = None)]
    pub lease: Option<crate::lease::LeaseOptions>,
}

/// Several dimensions (per IP, per user, per route...) decided atomically together. The
/// returned decision is the binding dimension's (`MultiDecision.binding`).
#[derive(uniffi::Object)]
pub struct MultiLimiter {
    inner: Arc<throttlekit::MultiLimiter>,
}

impl MultiLimiter {
    /// The core limiter, for the HTTP edge (`http.rs`).
    pub(crate) fn core(&self) -> &throttlekit::MultiLimiter {
        &self.inner
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl MultiLimiter {
    /// A multi limiter combining `dimensions` by `rule`.
    #[uniffi::constructor]
    pub fn new(rule: Rule, dimensions: Vec<Dimension>, options: MultiLimiterOptions) -> Result<Arc<Self>> {
        let mode = crate::lease::mode(options.mode.as_deref(), options.lease.as_ref())?;
        let mut dims = Vec::with_capacity(dimensions.len());
        for d in dimensions {
            let m = u64::try_from(d.cost_multiplier)
                .map_err(|_| ThrottleKitError::config("cost_multiplier", "must be a positive integer"))?;
            dims.push(throttlekit::Dimension::new(d.name, d.strategy.inner.clone()).cost_multiplier(m));
        }
        let store = Resolved::from_option(options.store.as_ref());
        let (server_clock, fail_policy) = store.settings(options.server_clock, options.fail_policy);
        let mut inner = throttlekit::MultiLimiter::new(rule.into(), dims)?
            .with_store(store.store)
            .with_clock(clock::from_option(options.clock.as_ref()))
            .with_server_clock(server_clock)
            .with_prefix(options.prefix);
        if let Some(policy) = fail_policy {
            inner = inner.with_fail_policy(policy);
        }
        if let Some(tag) = options.hash_tag {
            inner = inner.with_hash_tag(tag)?;
        }
        // After the prefix: the metrics are labelled with it.
        inner = inner.with_metrics(options.metrics);
        let inner = inner.with_mode(mode)?;
        Ok(Arc::new(MultiLimiter { inner: Arc::new(inner) }))
    }

    /// The counters (all zero and `enabled == false` unless made with `metrics = true`).
    pub fn metrics(&self) -> crate::records::Metrics {
        crate::records::Metrics::from_core(self.inner.metrics())
    }

    /// Checks one request: `keys` holds one key per dimension, in declaration order; blocks.
    #[uniffi::method(default(cost = 1))]
    pub fn check_blocking(&self, keys: Vec<String>, cost: i64) -> Result<MultiDecision> {
        let cost = crate::convert::cost(cost)?;
        Ok(self.inner.check_sync(&refs(&keys), cost)?.into())
    }

    /// Checks one request (on Redis: one fused script call).
    #[uniffi::method(default(cost = 1))]
    pub async fn check(&self, keys: Vec<String>, cost: i64) -> Result<MultiDecision> {
        let cost = crate::convert::cost(cost)?;
        Ok(self.inner.check(&refs(&keys), cost).await?.into())
    }

    /// Forgets every dimension's state for `keys`; blocks.
    pub fn reset_blocking(&self, keys: Vec<String>) -> Result<()> {
        Ok(self.inner.reset_sync(&refs(&keys))?)
    }

    /// Forgets every dimension's state for `keys`.
    pub async fn reset(&self, keys: Vec<String>) -> Result<()> {
        Ok(self.inner.reset(&refs(&keys)).await?)
    }

    /// The two-tier mode: `"strict"`, `"cached_deny"` or `"leased"`.
    pub fn mode(&self) -> String {
        self.inner.mode().name().to_owned()
    }

    /// The local tier's counters (all 0 in strict mode): `local_admits` and `local_denials`
    /// count requests, `leases` fused lease calls (one store call each).
    pub fn tier_stats(&self) -> crate::lease::TierStats {
        self.inner.tier_stats().into()
    }

    /// Gives back each dimension key's leased credits unused for `idle_ms` (`nil`: every key,
    /// as on shutdown) where that dimension's strategy can take them back; returns the units
    /// taken back. Blocks for the store calls.
    #[uniffi::method(default(idle_ms = None))]
    pub fn release_leases_blocking(&self, idle_ms: Option<i64>) -> Result<u64> {
        Ok(self.inner.release_leases_sync(crate::lease::idle(idle_ms)?)?)
    }

    /// Gives back each dimension key's leased credits unused for `idle_ms` (`nil`: every key).
    #[uniffi::method(default(idle_ms = None))]
    pub async fn release_leases(&self, idle_ms: Option<i64>) -> Result<u64> {
        let idle = crate::lease::idle(idle_ms)?;
        Ok(self.inner.release_leases(idle).await?)
    }

    /// The rule.
    pub fn rule(&self) -> Rule {
        match self.inner.rule() {
            throttlekit::Rule::All => Rule::All,
            throttlekit::Rule::Any => Rule::Any,
        }
    }

    /// The dimensions' names, in declaration order.
    pub fn dimension_names(&self) -> Vec<String> {
        self.inner.dimensions().iter().map(|d| d.name.clone()).collect()
    }
}
