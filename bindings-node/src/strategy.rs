//! [`Strategy`]: a validated algorithm, built from typed options or from a spec object — the
//! conformance vectors' `{kind, options}` format, which the core parses and validates.
//!
//! Every constructor funnels into `throttlekit::StrategySpec` through JSON, so validation
//! (and every `config_invalid` message) is the core's. The option interfaces below exist to
//! give TypeScript users the exact shapes; values are read by hand in `convert`.

use napi::Env;
use napi::bindgen_prelude::{Either6, Unknown};
use napi_derive::napi;
use serde_json::{Value, json};

use crate::convert;
use crate::error::{CoreResult, OrThrow, config};

/// Options of `Strategy.gcra`: `limit` requests per `periodMs`, `burst` at once.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct GcraOptions {
    /// Sustained rate: requests per `periodMs` (integer >= 1).
    pub limit: f64,
    /// The period of `limit`, in ms (> 0).
    pub period_ms: f64,
    /// Requests admissible at once from idle (integer >= 1); defaults to `limit`.
    pub burst: Option<f64>,
}

/// Options of `Strategy.tokenBucket`.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct TokenBucketOptions {
    /// Bucket size (integer >= 1); a new bucket starts full.
    pub capacity: f64,
    /// Tokens added per second (> 0, may be fractional).
    pub refill_per_sec: f64,
}

/// Options of `Strategy.fixedWindow` and `Strategy.slidingWindowLog`.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct WindowOptions {
    /// Units per window (integer >= 1).
    pub limit: f64,
    /// Window length in ms (integer >= 1).
    pub window_ms: f64,
}

/// Options of `Strategy.slidingWindow`.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct SlidingWindowOptions {
    /// Units per window (integer >= 1).
    pub limit: f64,
    /// Window length in ms (integer >= 1).
    pub window_ms: f64,
    /// Sub-buckets (integer from 1 to 1000000 and to `1000 * windowMs`, each bucket at least
    /// 1 microsecond; default 10).
    pub buckets: Option<f64>,
}

/// Options of `Strategy.quota`.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct QuotaOptions {
    /// Units per period (integer >= 1).
    pub limit: f64,
    /// When the budget starts over.
    #[napi(ts_type = "'calendar-month' | 'calendar-week' | 'calendar-day' | 'fixed' | 'rolling'")]
    pub reset_cadence: String,
    /// Period length in ms (integer >= 1); required for `fixed` and `rolling`.
    pub period_ms: Option<f64>,
    /// Where `fixed` periods are aligned (integer epoch ms, default 0).
    pub anchor: Option<f64>,
    /// Fixed UTC offset of the calendar, in minutes (integer in ±840, default 0).
    pub offset_minutes: Option<f64>,
    /// First day of a calendar week: 0 = Sunday … 6 = Saturday (default 1, Monday).
    pub week_starts_on: Option<f64>,
    /// Sub-buckets of a `rolling` quota (integer from 1 to 1000000 and to `1000 * periodMs`,
    /// each bucket at least 1 microsecond; default 10).
    pub buckets: Option<f64>,
}

/// `{kind: 'gcra', options}`.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct GcraSpec {
    #[napi(ts_type = "'gcra'")]
    pub kind: String,
    pub options: GcraOptions,
}

/// `{kind: 'tokenBucket', options}`.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct TokenBucketSpec {
    #[napi(ts_type = "'tokenBucket'")]
    pub kind: String,
    pub options: TokenBucketOptions,
}

/// `{kind: 'fixedWindow', options}`.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct FixedWindowSpec {
    #[napi(ts_type = "'fixedWindow'")]
    pub kind: String,
    pub options: WindowOptions,
}

/// `{kind: 'slidingWindow', options}`.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct SlidingWindowSpec {
    #[napi(ts_type = "'slidingWindow'")]
    pub kind: String,
    pub options: SlidingWindowOptions,
}

/// `{kind: 'slidingWindowLog', options}`.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct SlidingWindowLogSpec {
    #[napi(ts_type = "'slidingWindowLog'")]
    pub kind: String,
    pub options: WindowOptions,
}

/// `{kind: 'quota', options}`.
#[napi(object)]
#[allow(dead_code)] // Declares the TypeScript shape; the core's serde parses the values.
pub struct QuotaSpec {
    #[napi(ts_type = "'quota'")]
    pub kind: String,
    pub options: QuotaOptions,
}

/// A strategy as data, exactly the conformance vectors' format.
#[napi]
#[allow(dead_code)] // Declares the TypeScript union; the core's serde parses the values.
pub type StrategySpec =
    Either6<GcraSpec, TokenBucketSpec, FixedWindowSpec, SlidingWindowSpec, SlidingWindowLogSpec, QuotaSpec>;

/// A validated rate-limiting algorithm. Build one with the static constructors or
/// `Strategy.fromSpec`; pass it (or a spec object) as a limiter's `strategy`.
#[napi]
pub struct Strategy {
    pub(crate) inner: throttlekit::Strategy,
}

/// Builds a strategy of `kind` from the JS options object `options`.
fn typed(env: &Env, kind: &str, options: &Unknown) -> napi::Result<Strategy> {
    let built = (|| {
        let options = convert::json(options, kind)?;
        if !options.is_object() {
            return Err(config(kind, "options must be an object"));
        }
        from_value(json!({ "kind": kind, "options": options }))
    })();
    Ok(Strategy { inner: built.or_throw(env)? })
}

/// Parses and validates a spec held as JSON.
pub(crate) fn from_value(spec: Value) -> CoreResult<throttlekit::Strategy> {
    let spec: throttlekit::StrategySpec =
        serde_json::from_value(spec).map_err(|e| config("strategy", &format!("is not a valid spec: {e}")))?;
    spec.build()
}

/// A strategy given as a `Strategy` instance or as a spec object.
pub(crate) fn from_js(env: &Env, v: &Unknown, field: &str) -> CoreResult<throttlekit::Strategy> {
    if let Some(s) = crate::instance::<Strategy>(env, v, field)? {
        return Ok(s.inner.clone());
    }
    from_value(convert::json(v, field)?)
}

#[napi]
impl Strategy {
    /// GCRA (the default algorithm): `limit` per `periodMs`, smooth pacing, `burst` at once.
    #[napi(factory, ts_args_type = "options: GcraOptions")]
    pub fn gcra(env: &Env, options: Unknown) -> napi::Result<Strategy> {
        typed(env, "gcra", &options)
    }

    /// Token bucket of `capacity`, refilling `refillPerSec` tokens a second.
    #[napi(factory, ts_args_type = "options: TokenBucketOptions")]
    pub fn token_bucket(env: &Env, options: Unknown) -> napi::Result<Strategy> {
        typed(env, "tokenBucket", &options)
    }

    /// Fixed window: `limit` per epoch-aligned `windowMs`.
    #[napi(factory, ts_args_type = "options: WindowOptions")]
    pub fn fixed_window(env: &Env, options: Unknown) -> napi::Result<Strategy> {
        typed(env, "fixedWindow", &options)
    }

    /// Sliding window: `limit` per rolling `windowMs`, estimated over `buckets` sub-buckets.
    #[napi(factory, ts_args_type = "options: SlidingWindowOptions")]
    pub fn sliding_window(env: &Env, options: Unknown) -> napi::Result<Strategy> {
        typed(env, "slidingWindow", &options)
    }

    /// Sliding-window log: exactly `limit` per trailing `windowMs` (memory grows with `limit`).
    #[napi(factory, ts_args_type = "options: WindowOptions")]
    pub fn sliding_window_log(env: &Env, options: Unknown) -> napi::Result<Strategy> {
        typed(env, "slidingWindowLog", &options)
    }

    /// Quota: a budget per calendar month/week/day (fixed UTC offset), fixed or rolling period.
    #[napi(factory, ts_args_type = "options: QuotaOptions")]
    pub fn quota(env: &Env, options: Unknown) -> napi::Result<Strategy> {
        typed(env, "quota", &options)
    }

    /// A strategy from a spec object (`{kind: 'gcra', options: {limit: 10, periodMs: 1000}}`).
    #[napi(factory, ts_args_type = "spec: StrategySpec")]
    pub fn from_spec(env: &Env, spec: Unknown) -> napi::Result<Strategy> {
        Ok(Strategy { inner: from_value(convert::json(&spec, "strategy").or_throw(env)?).or_throw(env)? })
    }

    /// The spec's kind (`'gcra'`, `'tokenBucket'`, ...).
    #[napi(getter, ts_return_type = "StrategySpec['kind']")]
    pub fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    /// The `limit` its decisions report (GCRA: the burst; token bucket: the capacity).
    #[napi(getter)]
    pub fn limit(&self) -> i64 {
        self.inner.limit()
    }

    /// The spec this strategy was built from (a fresh object each call).
    #[napi(ts_return_type = "StrategySpec")]
    pub fn to_spec(&self, env: &Env) -> napi::Result<Value> {
        serde_json::to_value(self.inner.spec())
            .map_err(|e| config("strategy", &format!("could not be serialized: {e}")))
            .or_throw(env)
    }

    /// `toJSON` for `JSON.stringify`: the spec.
    #[napi(js_name = "toJSON", ts_return_type = "StrategySpec")]
    pub fn to_json(&self, env: &Env) -> napi::Result<Value> {
        self.to_spec(env)
    }
}
