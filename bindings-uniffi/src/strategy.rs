//! `Strategy`: a validated algorithm, built with a typed constructor or from a JSON spec.
//!
//! Every constructor builds core's `StrategySpec` and lets core validate it, so
//! `Strategy.gcra(0, 1000.0, null)` and `Strategy.fromJson(...)` fail with the same
//! `config_invalid` message as every other language.

use std::sync::Arc;

use throttlekit::spec::{
    GcraOptions, QuotaOptions, ResetCadence, SlidingWindowOptions, StrategySpec, TokenBucketOptions, WindowOptions,
};

use crate::convert::{int_option, opt_int_option};
use crate::error::{Result, ThrottleKitError};

/// A validated rate-limiting algorithm. Immutable; share it between limiters freely.
#[derive(uniffi::Object)]
pub struct Strategy {
    pub(crate) inner: throttlekit::Strategy,
}

fn build(spec: StrategySpec) -> Result<Arc<Strategy>> {
    Ok(Arc::new(Strategy { inner: spec.build()? }))
}

/// The reset cadence's JSON name (`"calendar-month"`, ...) as core's enum.
fn cadence(name: &str) -> Result<ResetCadence> {
    serde_json::from_value(serde_json::Value::String(name.to_owned())).map_err(|_| {
        ThrottleKitError::config(
            "reset_cadence",
            "must be calendar-month, calendar-week, calendar-day, fixed or rolling",
        )
    })
}

#[uniffi::export]
impl Strategy {
    /// GCRA (the default algorithm): `limit` requests per `period_ms`, `burst` at once from
    /// idle (`null`: `limit`). Decisions report `limit = burst`.
    #[uniffi::constructor]
    pub fn gcra(limit: i64, period_ms: f64, burst: Option<i64>) -> Result<Arc<Self>> {
        build(StrategySpec::Gcra(GcraOptions {
            limit: int_option(limit, "limit")?,
            period_ms,
            burst: opt_int_option(burst, "burst")?,
        }))
    }

    /// Token bucket of `capacity` tokens (starts full), refilling `refill_per_sec` a second.
    #[uniffi::constructor]
    pub fn token_bucket(capacity: i64, refill_per_sec: f64) -> Result<Arc<Self>> {
        build(StrategySpec::TokenBucket(TokenBucketOptions {
            capacity: int_option(capacity, "capacity")?,
            refill_per_sec,
        }))
    }

    /// Fixed window: `limit` units per epoch-aligned window of `window_ms`.
    #[uniffi::constructor]
    pub fn fixed_window(limit: i64, window_ms: i64) -> Result<Arc<Self>> {
        build(StrategySpec::FixedWindow(WindowOptions {
            limit: int_option(limit, "limit")?,
            window_ms: int_option(window_ms, "window_ms")?,
        }))
    }

    /// Sliding window of `window_ms` estimated from `buckets` sub-buckets (`null`: 10).
    #[uniffi::constructor]
    pub fn sliding_window(limit: i64, window_ms: i64, buckets: Option<i64>) -> Result<Arc<Self>> {
        build(StrategySpec::SlidingWindow(SlidingWindowOptions {
            limit: int_option(limit, "limit")?,
            window_ms: int_option(window_ms, "window_ms")?,
            buckets: opt_int_option(buckets, "buckets")?,
        }))
    }

    /// Exact sliding-window log: at most `limit` units in any trailing `window_ms`.
    #[uniffi::constructor]
    pub fn sliding_window_log(limit: i64, window_ms: i64) -> Result<Arc<Self>> {
        build(StrategySpec::SlidingWindowLog(WindowOptions {
            limit: int_option(limit, "limit")?,
            window_ms: int_option(window_ms, "window_ms")?,
        }))
    }

    /// A quota of `limit` units per period. `reset_cadence` is `"calendar-month"`,
    /// `"calendar-week"`, `"calendar-day"`, `"fixed"` (needs `period_ms`, aligned to `anchor`)
    /// or `"rolling"` (a sliding window of `period_ms`). Calendars use a fixed UTC offset of
    /// `offset_minutes` (±840); weeks start on `week_starts_on` (0 = Sunday, default 1).
    #[uniffi::constructor]
    pub fn quota(
        limit: i64,
        reset_cadence: String,
        period_ms: Option<i64>,
        anchor: Option<i64>,
        offset_minutes: Option<i64>,
        week_starts_on: Option<i64>,
        buckets: Option<i64>,
    ) -> Result<Arc<Self>> {
        build(StrategySpec::Quota(QuotaOptions {
            limit: int_option(limit, "limit")?,
            reset_cadence: cadence(&reset_cadence)?,
            period_ms: opt_int_option(period_ms, "period_ms")?,
            anchor: opt_int_option(anchor, "anchor")?,
            offset_minutes: opt_int_option(offset_minutes, "offset_minutes")?,
            week_starts_on: opt_int_option(week_starts_on, "week_starts_on")?,
            buckets: opt_int_option(buckets, "buckets")?,
        }))
    }

    /// From JSON text in the vectors' format: `{"kind": "gcra", "options": {"limit": 10,
    /// "periodMs": 1000}}` (camelCase keys; unknown keys are refused).
    /// One rate as configurations write it (`"10/second"`, `"1 per 5 minutes"`), read by core
    /// as `strategy` (`"gcra"`, the default, `"fixed-window"`, `"sliding-window"`,
    /// `"sliding-window-log"`): the same reader and errors as every other language.
    #[uniffi::constructor(default(strategy = None))]
    pub fn from_rate(text: String, strategy: Option<String>) -> Result<Arc<Self>> {
        let kind = throttlekit::RateStrategy::from_name(strategy.as_deref().unwrap_or("gcra"))?;
        Ok(Arc::new(Strategy { inner: throttlekit::Rate::parse(&text)?.strategy(kind)? }))
    }

    #[uniffi::constructor]
    pub fn from_json(json: String) -> Result<Arc<Self>> {
        Ok(Arc::new(Strategy { inner: throttlekit::Strategy::from_json(&json)? }))
    }

    /// The spec's kind: `"gcra"`, `"tokenBucket"`, `"fixedWindow"`, `"slidingWindow"`,
    /// `"slidingWindowLog"` or `"quota"`.
    pub fn kind(&self) -> String {
        self.inner.kind().to_owned()
    }

    /// The `limit` its decisions report (GCRA: the burst; token bucket: the capacity).
    pub fn limit(&self) -> i64 {
        self.inner.limit()
    }

    /// The spec as JSON text (the format `from_json` reads).
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self.inner.spec()).map_err(|e| ThrottleKitError::config("strategy", &e.to_string()))
    }
}
