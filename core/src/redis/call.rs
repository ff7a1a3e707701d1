//! Turning a [`Transform`] into a script call (KEYS and ARGV), and a script's reply back into a
//! [`Reply`]. No decision logic lives here: options go to the scripts exactly as the spec holds
//! them, and the scripts derive everything the way the Rust algorithms do.

use redis::Value;

use crate::decision::{Decision, Reservation};
use crate::error::{Error, Result};
use crate::redis::scripts::{LoadedScript, SCRIPTS};
use crate::spec::{QuotaOptions, ResetCadence, StrategySpec};
use crate::store::{DimensionCall, MultiReply, Now, Reply, Rule, Transform};
use crate::strategy::Strategy;

/// What shape of reply a call expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `{allowed, limit, remaining, resetAt, retryAfterMs, ttl}`.
    Decision,
    /// `{accepted, delayMs, ttl}`.
    Reservation,
    /// `{admitted, (allowed, limit, remaining, resetAt, retryAfterMs, ttl) per dimension}`.
    Multi,
}

/// One script invocation, owned so that it can move to the store's runtime.
#[derive(Clone, Debug)]
pub struct ScriptCall {
    /// The script.
    pub script: &'static LoadedScript,
    /// `KEYS`.
    pub keys: Vec<String>,
    /// `ARGV`.
    pub args: Vec<String>,
    /// The reply's shape.
    pub shape: Shape,
}

/// A script's reply, decoded, with the TTL it wrote per key (`None`: nothing written).
#[derive(Clone, Debug)]
pub struct Decoded {
    /// The reply for the caller.
    pub reply: Outcome,
    /// Per key, in `KEYS` order: the TTL the script set when it wrote the key.
    pub ttls: Vec<Option<i64>>,
}

/// A decoded reply.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// A single-key reply.
    Single(Reply),
    /// A multi reply.
    Multi(MultiReply),
}

/// A number as the scripts read it (`tonumber` parses Rust's shortest round-trip form exactly).
fn num(v: f64) -> String {
    format!("{v}")
}

/// `now` for ARGV[1]: "0" asks the script to read `TIME`, so an explicit 0 is sent as "0.0".
pub fn now_arg(now: Now) -> String {
    match now {
        Now::Server => "0".to_string(),
        Now::At(0) => "0.0".to_string(),
        Now::At(t) => t.to_string(),
    }
}

fn cadence(c: ResetCadence) -> &'static str {
    match c {
        ResetCadence::CalendarMonth => "calendar-month",
        ResetCadence::CalendarWeek => "calendar-week",
        ResetCadence::CalendarDay => "calendar-day",
        ResetCadence::Fixed => "fixed",
        ResetCadence::Rolling => "rolling",
    }
}

fn quota_args(o: &QuotaOptions) -> Vec<String> {
    vec![
        num(o.limit),
        cadence(o.reset_cadence).to_string(),
        num(o.period_ms.unwrap_or(0.0)),
        num(o.anchor.unwrap_or(0.0)),
        num(o.offset_minutes.unwrap_or(0.0)),
        num(o.week_starts_on.unwrap_or(1.0)),
    ]
}

/// The script, the fused script's kind name, and the options of `strategy`.
pub fn strategy_args(strategy: &Strategy) -> (&'static LoadedScript, &'static str, Vec<String>) {
    let s = &*SCRIPTS;
    let buckets = |b: Option<f64>| num(b.unwrap_or(crate::algorithms::sliding_window::DEFAULT_BUCKETS as f64));
    match strategy.spec() {
        StrategySpec::Gcra(o) => {
            (&s.gcra, "gcra", vec![num(o.limit), num(o.period_ms), num(o.burst.unwrap_or(o.limit))])
        }
        StrategySpec::TokenBucket(o) => (&s.token_bucket, "tokenBucket", vec![num(o.capacity), num(o.refill_per_sec)]),
        StrategySpec::FixedWindow(o) => (&s.fixed_window, "fixedWindow", vec![num(o.limit), num(o.window_ms)]),
        StrategySpec::SlidingWindow(o) => {
            (&s.sliding_window, "slidingWindow", vec![num(o.limit), num(o.window_ms), buckets(o.buckets)])
        }
        StrategySpec::SlidingWindowLog(o) => {
            (&s.sliding_window_log, "slidingWindowLog", vec![num(o.limit), num(o.window_ms)])
        }
        // A rolling quota is the sliding window with windowMs = periodMs (same decisions, same state).
        StrategySpec::Quota(o) if o.reset_cadence == ResetCadence::Rolling => (
            &s.sliding_window,
            "slidingWindow",
            vec![num(o.limit), num(o.period_ms.unwrap_or(0.0)), buckets(o.buckets)],
        ),
        StrategySpec::Quota(o) => (&s.quota, "quota", quota_args(o)),
    }
}

/// The call for a single-key transform.
pub fn single(key: &str, now: Now, transform: &Transform<'_>) -> ScriptCall {
    let (script, mode, cost, options, shape) = match *transform {
        Transform::Check { strategy, cost } => {
            let (script, _, o) = strategy_args(strategy);
            (script, "check", cost, o, Shape::Decision)
        }
        Transform::Forecast { strategy, cost } => {
            let (script, _, o) = strategy_args(strategy);
            (script, "forecast", cost, o, Shape::Decision)
        }
        Transform::Peek { strategy } => {
            let (script, _, o) = strategy_args(strategy);
            (script, "peek", 1, o, Shape::Decision)
        }
        Transform::Reserve { shaper, cost } => {
            let o = shaper.options();
            (&SCRIPTS.leaky_bucket, "reserve", cost, vec![num(o.rate_per_sec), num(o.max_queue_ms)], Shape::Reservation)
        }
    };
    let mut args = Vec::with_capacity(3 + options.len());
    args.push(now_arg(now));
    args.push(mode.to_string());
    args.push(cost.to_string());
    args.extend(options);
    ScriptCall { script, keys: vec![key.to_string()], args, shape }
}

/// The fused call for a multi-dimensional check.
pub fn multi(rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> ScriptCall {
    let mut args = vec![
        now_arg(now),
        match rule {
            Rule::All => "all",
            Rule::Any => "any",
        }
        .to_string(),
        dims.len().to_string(),
    ];
    for d in dims {
        let (_, kind, options) = strategy_args(d.strategy);
        args.push(kind.to_string());
        args.push(d.cost.to_string());
        args.push(options.len().to_string());
        args.extend(options);
    }
    ScriptCall {
        script: &SCRIPTS.multi,
        keys: dims.iter().map(|d| d.key.to_string()).collect(),
        args,
        shape: Shape::Multi,
    }
}

fn bad(script: &LoadedScript, value: &Value) -> Error {
    Error::store(format!("unexpected reply from {}: {value:?}", script.name))
}

fn ints(call: &ScriptCall, value: &Value) -> Result<Vec<i64>> {
    let Value::Array(items) = value else { return Err(bad(call.script, value)) };
    items.iter().map(|v| if let Value::Int(i) = v { Ok(*i) } else { Err(bad(call.script, value)) }).collect()
}

fn ttl(v: i64) -> Option<i64> {
    (v >= 0).then_some(v)
}

fn decision(f: &[i64]) -> Decision {
    Decision { allowed: f[0] == 1, limit: f[1], remaining: f[2], reset_at: f[3], retry_after_ms: f[4], fallback: false }
}

/// Decodes the script's reply to `call`.
pub fn decode(call: &ScriptCall, value: &Value) -> Result<Decoded> {
    let f = ints(call, value)?;
    match call.shape {
        Shape::Decision if f.len() == 6 => {
            Ok(Decoded { reply: Outcome::Single(Reply::Decision(decision(&f))), ttls: vec![ttl(f[5])] })
        }
        Shape::Reservation if f.len() == 3 => Ok(Decoded {
            reply: Outcome::Single(Reply::Reservation(Reservation { accepted: f[0] == 1, delay_ms: f[1] })),
            ttls: vec![ttl(f[2])],
        }),
        Shape::Multi if f.len() == 1 + 6 * call.keys.len() => {
            let dims = f[1..].chunks(6);
            Ok(Decoded {
                ttls: dims.clone().map(|c| ttl(c[5])).collect(),
                reply: Outcome::Multi(MultiReply { allowed: f[0] == 1, decisions: dims.map(decision).collect() }),
            })
        }
        _ => Err(bad(call.script, value)),
    }
}
