//! Strategies described as data: `{"kind": "gcra", "options": {"limit": 10, "periodMs": 1000}}`.
//!
//! This is exactly the format of the conformance vectors (camelCase). Every binding, the C ABI
//! and the CLI configure strategies through a [`StrategySpec`], so parameters are validated in
//! one place: [`StrategySpec::build`]. Numbers are `f64` because that is what JSON, JavaScript
//! and the Lua scripts carry; `build` rejects non-integers where an integer is required.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::strategy::Strategy;

/// A strategy as data. Build it with [`StrategySpec::build`] or parse it with
/// [`StrategySpec::from_json`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "options", rename_all = "camelCase", deny_unknown_fields)]
pub enum StrategySpec {
    /// Generic cell rate algorithm (the default).
    Gcra(GcraOptions),
    /// Token bucket.
    TokenBucket(TokenBucketOptions),
    /// Epoch-aligned fixed window.
    FixedWindow(WindowOptions),
    /// Sub-bucketed sliding window.
    SlidingWindow(SlidingWindowOptions),
    /// Exact sliding-window log.
    SlidingWindowLog(WindowOptions),
    /// Calendar, fixed or rolling quota.
    Quota(QuotaOptions),
}

/// Options of [`StrategySpec::Gcra`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GcraOptions {
    /// Sustained rate: requests per `period_ms` (integer >= 1).
    pub limit: f64,
    /// The period of `limit`, in ms (> 0).
    pub period_ms: f64,
    /// Requests admissible at once from idle (integer >= 1); defaults to `limit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<f64>,
}

/// Options of [`StrategySpec::TokenBucket`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenBucketOptions {
    /// Bucket size (integer >= 1); a new bucket starts full.
    pub capacity: f64,
    /// Tokens added per second (> 0, may be fractional).
    pub refill_per_sec: f64,
}

/// Options of [`StrategySpec::FixedWindow`] and [`StrategySpec::SlidingWindowLog`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WindowOptions {
    /// Units per window (integer >= 1).
    pub limit: f64,
    /// Window length in ms (integer >= 1).
    pub window_ms: f64,
}

/// Options of [`StrategySpec::SlidingWindow`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SlidingWindowOptions {
    /// Units per window (integer >= 1).
    pub limit: f64,
    /// Window length in ms (integer >= 1).
    pub window_ms: f64,
    /// Sub-buckets per window (integer from 1 to 1000000 and to `1000 * windowMs`, each bucket at
    /// least 1 microsecond; default 10; 1 is the two-counter estimator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<f64>,
}

/// When a quota starts over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResetCadence {
    /// At midnight of the first day of each month (at `offsetMinutes` from UTC).
    #[serde(rename = "calendar-month")]
    CalendarMonth,
    /// At midnight of each `weekStartsOn` day.
    #[serde(rename = "calendar-week")]
    CalendarWeek,
    /// At each midnight.
    #[serde(rename = "calendar-day")]
    CalendarDay,
    /// Every `periodMs`, aligned to `anchor`.
    #[serde(rename = "fixed")]
    Fixed,
    /// A sliding window of `periodMs` (the sub-bucketed sliding window).
    #[serde(rename = "rolling")]
    Rolling,
}

/// Options of [`StrategySpec::Quota`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuotaOptions {
    /// Units per period (integer >= 1).
    pub limit: f64,
    /// When the budget starts over.
    pub reset_cadence: ResetCadence,
    /// Period length in ms (integer >= 1); required for `fixed` and `rolling`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_ms: Option<f64>,
    /// Where `fixed` periods are aligned (integer epoch ms, default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<f64>,
    /// Fixed UTC offset of the calendar, in minutes (integer in ±840, default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_minutes: Option<f64>,
    /// First day of a calendar week: 0 = Sunday … 6 = Saturday (default 1, Monday).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub week_starts_on: Option<f64>,
    /// Sub-buckets of a `rolling` quota (integer from 1 to 1000000 and to `1000 * periodMs`,
    /// each bucket at least 1 microsecond; default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<f64>,
}

/// Options of the leaky-bucket [`crate::Shaper`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeakyBucketOptions {
    /// Departures per second (> 0, may be fractional).
    pub rate_per_sec: f64,
    /// Longest accepted wait in ms (>= 0).
    pub max_queue_ms: f64,
}

impl StrategySpec {
    /// Parses a spec from JSON text. Malformed JSON, an unknown kind, an unknown option or a
    /// value of the wrong type is `config_invalid`; so is every out-of-range value.
    pub fn from_json(text: &str) -> Result<StrategySpec> {
        serde_json::from_str(text).map_err(|e| Error::config("strategy", &format!("is not a valid spec: {e}")))
    }

    /// Validates the options and builds the strategy.
    pub fn build(&self) -> Result<Strategy> {
        Strategy::from_spec(self)
    }

    /// The spec's `kind` as it appears in JSON (`"gcra"`, `"tokenBucket"`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            StrategySpec::Gcra(_) => "gcra",
            StrategySpec::TokenBucket(_) => "tokenBucket",
            StrategySpec::FixedWindow(_) => "fixedWindow",
            StrategySpec::SlidingWindow(_) => "slidingWindow",
            StrategySpec::SlidingWindowLog(_) => "slidingWindowLog",
            StrategySpec::Quota(_) => "quota",
        }
    }
}

impl LeakyBucketOptions {
    /// Parses shaper options from JSON text (`{"ratePerSec": 5, "maxQueueMs": 1000}`).
    pub fn from_json(text: &str) -> Result<LeakyBucketOptions> {
        serde_json::from_str(text).map_err(|e| Error::config("shaper", &format!("is not a valid spec: {e}")))
    }
}

mod data;
pub(crate) mod value;
pub use data::{Data, Num};
pub use value::OptionValue;
