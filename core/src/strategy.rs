//! [`Strategy`]: one validated algorithm, dispatched by a `match` (no boxing on the hot path).

use crate::algorithms::fixed_window::FixedWindow;
use crate::algorithms::gcra::Gcra;
use crate::algorithms::quota::Quota;
use crate::algorithms::sliding_window::SlidingWindow;
use crate::algorithms::sliding_window_log::SlidingWindowLog;
use crate::algorithms::token_bucket::TokenBucket;
use crate::decision::Decision;
use crate::error::Result;
use crate::spec::{GcraOptions, QuotaOptions, SlidingWindowOptions, StrategySpec, TokenBucketOptions, WindowOptions};
use crate::state::{State, Step};
use crate::store::Now;

/// A validated rate-limiting algorithm. Build one from a [`StrategySpec`] or with the typed
/// constructors ([`Strategy::gcra`], ...), which produce a spec and validate it the same way.
#[derive(Clone, Debug, PartialEq)]
pub struct Strategy {
    spec: StrategySpec,
    algorithm: Algorithm,
}

#[derive(Clone, Debug, PartialEq)]
enum Algorithm {
    Gcra(Gcra),
    TokenBucket(TokenBucket),
    FixedWindow(FixedWindow),
    SlidingWindow(SlidingWindow),
    SlidingWindowLog(SlidingWindowLog),
    Quota(Quota),
}

/// Forwards a call to the algorithm inside a [`Strategy`].
macro_rules! dispatch {
    ($self:expr, $a:ident => $body:expr) => {
        match &$self.algorithm {
            Algorithm::Gcra($a) => $body,
            Algorithm::TokenBucket($a) => $body,
            Algorithm::FixedWindow($a) => $body,
            Algorithm::SlidingWindow($a) => $body,
            Algorithm::SlidingWindowLog($a) => $body,
            Algorithm::Quota($a) => $body,
        }
    };
}

impl Strategy {
    /// Validates `spec` and builds the strategy; bad options are `config_invalid` naming the field.
    pub fn from_spec(spec: &StrategySpec) -> Result<Strategy> {
        let algorithm = match spec {
            StrategySpec::Gcra(o) => Algorithm::Gcra(Gcra::new(o)?),
            StrategySpec::TokenBucket(o) => Algorithm::TokenBucket(TokenBucket::new(o)?),
            StrategySpec::FixedWindow(o) => Algorithm::FixedWindow(FixedWindow::new(o)?),
            StrategySpec::SlidingWindow(o) => Algorithm::SlidingWindow(SlidingWindow::new(o)?),
            StrategySpec::SlidingWindowLog(o) => Algorithm::SlidingWindowLog(SlidingWindowLog::new(o)?),
            StrategySpec::Quota(o) => Algorithm::Quota(Quota::new(o)?),
        };
        Ok(Strategy { spec: spec.clone(), algorithm })
    }

    /// Parses and validates a JSON spec.
    pub fn from_json(text: &str) -> Result<Strategy> {
        StrategySpec::from_json(text)?.build()
    }

    /// GCRA: `limit` requests per `period_ms`, `burst` at once (default `limit`).
    pub fn gcra(limit: u64, period_ms: u64, burst: Option<u64>) -> Result<Strategy> {
        Strategy::from_spec(&StrategySpec::Gcra(GcraOptions {
            limit: limit as f64,
            period_ms: period_ms as f64,
            burst: burst.map(|b| b as f64),
        }))
    }

    /// Token bucket of `capacity`, refilling `refill_per_sec` tokens a second.
    pub fn token_bucket(capacity: u64, refill_per_sec: f64) -> Result<Strategy> {
        Strategy::from_spec(&StrategySpec::TokenBucket(TokenBucketOptions {
            capacity: capacity as f64,
            refill_per_sec,
        }))
    }

    /// Fixed window: `limit` per epoch-aligned `window_ms`.
    pub fn fixed_window(limit: u64, window_ms: u64) -> Result<Strategy> {
        Strategy::from_spec(&StrategySpec::FixedWindow(WindowOptions {
            limit: limit as f64,
            window_ms: window_ms as f64,
        }))
    }

    /// Sliding window: `limit` per rolling `window_ms`, `buckets` sub-buckets (default 10).
    pub fn sliding_window(limit: u64, window_ms: u64, buckets: Option<u64>) -> Result<Strategy> {
        Strategy::from_spec(&StrategySpec::SlidingWindow(SlidingWindowOptions {
            limit: limit as f64,
            window_ms: window_ms as f64,
            buckets: buckets.map(|b| b as f64),
        }))
    }

    /// Sliding-window log: exactly `limit` per trailing `window_ms`.
    pub fn sliding_window_log(limit: u64, window_ms: u64) -> Result<Strategy> {
        Strategy::from_spec(&StrategySpec::SlidingWindowLog(WindowOptions {
            limit: limit as f64,
            window_ms: window_ms as f64,
        }))
    }

    /// Quota with the given options.
    pub fn quota(options: QuotaOptions) -> Result<Strategy> {
        Strategy::from_spec(&StrategySpec::Quota(options))
    }

    /// The spec this strategy was built from.
    pub fn spec(&self) -> &StrategySpec {
        &self.spec
    }

    /// The spec's kind (`"gcra"`, `"tokenBucket"`, ...).
    pub fn kind(&self) -> &'static str {
        self.spec.kind()
    }

    /// The `limit` field its decisions report.
    pub fn limit(&self) -> i64 {
        dispatch!(self, a => a.limit())
    }

    /// Whether the periodic quota cadences apply (they fail closed by default).
    pub fn is_quota(&self) -> bool {
        matches!(self.algorithm, Algorithm::Quota(_))
    }

    /// The GCRA configuration, when this is GCRA (stores with a GCRA fast path use it).
    #[inline]
    pub(crate) fn as_gcra(&self) -> Option<&Gcra> {
        match &self.algorithm {
            Algorithm::Gcra(g) => Some(g),
            _ => None,
        }
    }

    /// The fixed-window configuration, when this is one (the Redis store's count reply).
    #[inline]
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn as_fixed_window(&self) -> Option<&FixedWindow> {
        match &self.algorithm {
            Algorithm::FixedWindow(w) => Some(w),
            _ => None,
        }
    }

    /// The token-bucket configuration, when this is one (the Postgres store's parameters).
    #[cfg(feature = "postgres")]
    pub(crate) fn as_token_bucket(&self) -> Option<&TokenBucket> {
        match &self.algorithm {
            Algorithm::TokenBucket(b) => Some(b),
            _ => None,
        }
    }

    /// The sliding-window configuration, when this is one (the Postgres store's parameters).
    #[cfg(feature = "postgres")]
    pub(crate) fn as_sliding_window(&self) -> Option<&SlidingWindow> {
        match &self.algorithm {
            Algorithm::SlidingWindow(w) => Some(w),
            _ => None,
        }
    }

    /// The quota configuration, when this is one (the Postgres store's parameters).
    #[cfg(feature = "postgres")]
    pub(crate) fn as_quota(&self) -> Option<&Quota> {
        match &self.algorithm {
            Algorithm::Quota(q) => Some(q),
            _ => None,
        }
    }

    /// The sliding-window-log configuration, when this is one (the memory store's log fast path).
    #[inline]
    pub(crate) fn as_sliding_window_log(&self) -> Option<&SlidingWindowLog> {
        match &self.algorithm {
            Algorithm::SlidingWindowLog(l) => Some(l),
            _ => None,
        }
    }

    /// The time of a call, checked: `validate::now_at`, then, for a sliding window (or a rolling
    /// quota), its tick at `now` within ±2^53 (see `SlidingWindow::check_tick`; the server's
    /// clock is Redis's). Out of line: one copy, called by every path that reaches a store
    /// (the memory store's inlined GCRA path checks its `now` itself).
    #[inline(never)]
    pub(crate) fn check_now(&self, now: Now) -> Result<()> {
        crate::validate::now_at(now)?;
        self.check_tick(now)
    }

    /// The second half of [`Strategy::check_now`], for a `now` already through
    /// `validate::now_at`: a sliding window's (or a rolling quota's) tick within ±2^53; nothing
    /// for the other algorithms. A multi-limiter checks its `now` once, then this per dimension.
    /// Out of line, like `check_now`: one copy (the WebAssembly module is size-bound).
    #[inline(never)]
    pub(crate) fn check_tick(&self, now: Now) -> Result<()> {
        if let (Algorithm::SlidingWindow(w) | Algorithm::Quota(Quota::Rolling(w)), Now::At(t)) = (&self.algorithm, now)
        {
            return w.check_tick(t);
        }
        Ok(())
    }

    /// The pure transition: decides a request of `cost` at `now` against the key's state in
    /// `slot`, and writes the new state there iff the request is allowed and `commit` is true.
    ///
    /// A `now` past ±2^53 is decided as at ±2^53 (`in_domain`); the limiters refuse it before
    /// they get here.
    #[inline]
    pub fn check(&self, slot: &mut Option<State>, now: i64, cost: u64, commit: bool) -> Step<Decision> {
        let now = crate::validate::in_domain(now);
        dispatch!(self, a => a.check(slot, now, cost, commit))
    }

    /// The decision a `cost` request would get at `now`, without consuming.
    pub fn forecast(&self, state: Option<&State>, now: i64, cost: u64) -> Decision {
        // `check` with `commit == false` never writes; it takes the slot by `&mut` only so that one
        // function serves both uses. Cloning the state keeps this path honest about that.
        let mut slot = state.cloned();
        self.check(&mut slot, now, cost, false).reply
    }

    /// Current capacity at `now` without consuming: `allowed` says whether a cost-1 request
    /// would pass, `remaining` how many units would.
    pub fn peek(&self, state: Option<&State>, now: i64) -> Decision {
        let now = crate::validate::in_domain(now);
        dispatch!(self, a => a.peek(state, now))
    }
}
