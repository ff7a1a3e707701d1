//! Turning a [`Transform`] into a script call (KEYS and ARGV), and a script's reply back into a
//! [`Reply`]. No decision logic lives here: options go to the scripts exactly as the spec holds
//! them, and the scripts derive everything the way the Rust algorithms do.

use crate::redis::engine::value::{Args, Value};

use crate::decision::{Decision, Reservation};
use crate::error::{Error, Result};
use crate::redis::float_text;
use crate::redis::scripts::{LoadedScript, SCRIPTS};
use crate::spec::{QuotaOptions, ResetCadence, StrategySpec};
use crate::store::{DimensionCall, DimensionLease, MultiGrant, MultiReply, Now, Reply, Rule, Transform};
use crate::strategy::Strategy;

pub use super::counts::{WindowCount, WindowCounts};

/// What shape of reply a call expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `{allowed, limit, remaining, resetAt, retryAfterMs, ttl}`.
    Decision,
    /// `{accepted, delayMs, ttl}`.
    Reservation,
    /// `{admitted, (allowed, limit, remaining, resetAt, retryAfterMs, ttl) per dimension}`.
    Multi,
    /// A multi check of one dimension sent as its strategy's single-key check: the
    /// [`Shape::Decision`] reply, read as a multi reply whose verdict is that decision's.
    MultiOfOne,
    /// `{granted, limit, resetAt, retryAfterMs, expiresInMs, ttl}` (lease.lua).
    Grant,
    /// A multi reply with `granted, expiresInMs` after each dimension's six (multi.lua's lease).
    MultiLease,
    /// A fixed-window check at the caller's `now` (fixed_window.lua's `count` mode), single-key
    /// or a one-dimension multi check: the reply is the count the window held before the
    /// check, one integer, and the decision and the TTL are the Rust fixed window's for that
    /// count (see [`WindowCount`]); for a multi check read as a multi reply as
    /// [`Shape::MultiOfOne`] reads its decision.
    WindowCount(WindowCount),
    /// A fused multi check whose dimensions are all fixed windows (at most
    /// [`WindowCounts::MAX`]), at the caller's `now` (multi.lua's `count` reply): `{admitted,
    /// then per dimension the count its window held}`, each decision and TTL the Rust fixed
    /// window's for that count, the verdict the rule's (see [`WindowCounts`]).
    WindowCounts(WindowCounts),
}

/// One script invocation, owned so that it can move to the store's runtime.
#[derive(Clone, Debug)]
pub struct ScriptCall {
    /// The script.
    pub script: &'static LoadedScript,
    /// `KEYS`.
    pub keys: Vec<String>,
    /// `ARGV`, already encoded (integers written straight into one buffer, no string per
    /// argument).
    pub args: Args,
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
    /// A multi-dimensional lease's reply.
    MultiGrant(MultiGrant),
}

impl Outcome {
    /// The reply to a single-key call (another shape is the store's failure).
    pub fn into_single(self) -> Result<Reply> {
        match self {
            Outcome::Single(r) => Ok(r),
            Outcome::Multi(_) | Outcome::MultiGrant(_) => Err(Error::store("a multi reply to a single-key call")),
        }
    }

    /// The reply to a multi call (another shape is the store's failure).
    pub fn into_multi(self) -> Result<MultiReply> {
        match self {
            Outcome::Multi(r) => Ok(r),
            _ => Err(Error::store("another reply to a multi call")),
        }
    }

    /// The reply to a multi-dimensional lease (another shape is the store's failure).
    pub fn into_multi_grant(self) -> Result<MultiGrant> {
        match self {
            Outcome::MultiGrant(r) => Ok(r),
            _ => Err(Error::store("another reply to a multi-dimensional lease")),
        }
    }
}

/// The largest magnitude below which every integral `f64` is an exact integer.
const EXACT_INT: f64 = 9_007_199_254_740_992.0;

/// Appends a number as the scripts read it: Rust's shortest round-trip form (`{v}`, written by
/// [`float_text::display`]), which `tonumber` parses exactly. Integral values (nearly every
/// option) take the integer formatter, which prints the same digits without allocating.
fn num(args: &mut Args, v: f64) {
    if v.fract() == 0.0 && v.abs() < EXACT_INT && !(v == 0.0 && v.is_sign_negative()) {
        args.arg(v as i64);
    } else {
        // The last fraction's text, kept: a limiter sends the same options at every call (a
        // token bucket's refill rate per second is rarely whole), and formatting one was the
        // largest piece of preparing a token bucket's REST call in the WebAssembly build (a
        // `--cpu-prof` of `check`: about 1 us of its 8 in the module).
        thread_local! {
            static LAST: std::cell::RefCell<(u64, String)> = const { std::cell::RefCell::new((0, String::new())) };
        }
        LAST.with_borrow_mut(|(bits, text)| {
            // `display` never writes an empty text: an empty one is the unset slot.
            if text.is_empty() || *bits != v.to_bits() {
                *text = float_text::display(v);
                *bits = v.to_bits();
            }
            args.arg(text.as_str());
        });
    }
}

/// Appends `now` for ARGV[1]: "0" asks the script to read `TIME`, so an explicit 0 is sent as
/// "0.0".
pub fn now_arg(args: &mut Args, now: Now) {
    match now {
        Now::Server => args.arg("0"),
        Now::At(0) => args.arg("0.0"),
        Now::At(t) => args.arg(t),
    };
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

/// The script, the fused script's kind name, and the options of `strategy` as numbers (the
/// quota's cadence name aside).
fn strategy_options(strategy: &Strategy) -> (&'static LoadedScript, &'static str, Options) {
    let s = &*SCRIPTS;
    let buckets = |b: Option<f64>| b.unwrap_or(crate::algorithms::sliding_window::DEFAULT_BUCKETS as f64);
    match strategy.spec() {
        StrategySpec::Gcra(o) => (&s.gcra, "gcra", Options::nums(&[o.limit, o.period_ms, o.burst.unwrap_or(o.limit)])),
        StrategySpec::TokenBucket(o) => {
            (&s.token_bucket, "tokenBucket", Options::nums(&[o.capacity, o.refill_per_sec]))
        }
        StrategySpec::FixedWindow(o) => (&s.fixed_window, "fixedWindow", Options::nums(&[o.limit, o.window_ms])),
        StrategySpec::SlidingWindow(o) => {
            (&s.sliding_window, "slidingWindow", Options::nums(&[o.limit, o.window_ms, buckets(o.buckets)]))
        }
        StrategySpec::SlidingWindowLog(o) => {
            (&s.sliding_window_log, "slidingWindowLog", Options::nums(&[o.limit, o.window_ms]))
        }
        // A rolling quota is the sliding window with windowMs = periodMs (same decisions, same state).
        StrategySpec::Quota(o) if o.reset_cadence == ResetCadence::Rolling => (
            &s.sliding_window,
            "slidingWindow",
            Options::nums(&[o.limit, o.period_ms.unwrap_or(0.0), buckets(o.buckets)]),
        ),
        StrategySpec::Quota(o) => (&s.quota, "quota", quota_options(o)),
    }
}

fn quota_options(o: &QuotaOptions) -> Options {
    Options {
        cadence: Some(cadence(o.reset_cadence)),
        nums: [
            o.limit,
            o.period_ms.unwrap_or(0.0),
            o.anchor.unwrap_or(0.0),
            o.offset_minutes.unwrap_or(0.0),
            o.week_starts_on.unwrap_or(1.0),
        ],
        len: 5,
    }
}

/// A strategy's options, on the stack: its numbers, and for the quota the cadence name sent
/// after the first number.
struct Options {
    cadence: Option<&'static str>,
    nums: [f64; 5],
    len: usize,
}

impl Options {
    fn nums(v: &[f64]) -> Options {
        let mut nums = [0.0; 5];
        nums[..v.len()].copy_from_slice(v);
        Options { cadence: None, nums, len: v.len() }
    }

    /// How many ARGV entries they take.
    fn count(&self) -> usize {
        self.len + usize::from(self.cadence.is_some())
    }

    fn append(&self, args: &mut Args) {
        for (i, &v) in self.nums[..self.len].iter().enumerate() {
            num(args, v);
            if let (0, Some(c)) = (i, self.cadence) {
                args.arg(c);
            }
        }
    }
}

/// The script a single-key check, peek or forecast of `strategy` runs, as an empty call of the
/// shape its reply takes: enough to decode that reply without keeping the call it answers.
/// `counted` is the cost of a check [`single`] sent in `count` mode ([`counted_cost`]), `None`
/// for every other call ([`Shape::Decision`]).
pub fn decision_call(strategy: &Strategy, now: Now, counted: Option<u64>) -> ScriptCall {
    let shape = match (counted, strategy.as_fixed_window(), now) {
        (Some(cost), Some(window), Now::At(now)) => {
            Shape::WindowCount(WindowCount { now, cost, window: *window, multi: false })
        }
        _ => Shape::Decision,
    };
    ScriptCall { script: strategy_options(strategy).0, keys: Vec::new(), args: Args::new(), shape }
}

/// The cost of `call` when it was sent in a fixed window's `count` mode (its reply is the
/// window's count), else `None`: what [`decision_call`] needs besides the strategy and `now`.
pub fn counted_cost(call: &ScriptCall) -> Option<u64> {
    match call.shape {
        Shape::WindowCount(w) => Some(w.cost),
        _ => None,
    }
}

/// The call for a lease or a give-back (lease.lua): the strategy's kind and options follow the
/// lease's own arguments.
fn lease(key: &str, now: Now, strategy: &Strategy, mode: &str, units: u64, arg4: i64, lifetime_ms: i64) -> ScriptCall {
    let (_, kind, options) = strategy_options(strategy);
    let mut args = Args::with_capacity(6 + options.count(), 96);
    now_arg(&mut args, now);
    args.arg(mode).arg(units).arg(arg4).arg(lifetime_ms).arg(kind);
    options.append(&mut args);
    ScriptCall { script: &SCRIPTS.lease, keys: vec![key.to_string()], args, shape: Shape::Grant }
}

/// The call for a single-key transform; a fixed-window check on the caller's clock goes in the
/// script's `count` mode ([`Shape::WindowCount`]), whose reply is the count alone.
///
/// Why every path may: each one decodes with the call's shape, and a binding's own transport
/// that keeps only a small `Copy` ticket per call (`transport::Ticket`: the time and
/// [`counted_cost`]) rebuilds the shape from it with [`decision_call`]. Inside Redis the count
/// reply costs ~35k instructions against ~43k for the six-integer one
/// (bench/redis_instructions.py).
pub fn single(key: &str, now: Now, transform: &Transform<'_>) -> ScriptCall {
    single_call(key, now, transform, false)
}

/// [`single`]; a fixed-window check in `count` mode reads its reply as a multi reply when
/// `multi` (a one-dimension multi check, [`multi`]).
fn single_call(key: &str, now: Now, transform: &Transform<'_>, multi: bool) -> ScriptCall {
    let (script, mode, cost, options, shape) = match *transform {
        Transform::Check { strategy, cost } if let (Some(window), Now::At(at)) = (strategy.as_fixed_window(), now) => {
            let (script, _, o) = strategy_options(strategy);
            let shape = Shape::WindowCount(WindowCount { now: at, cost, window: *window, multi });
            (script, "count", cost, o, shape)
        }
        Transform::Check { strategy, cost } => {
            let (script, _, o) = strategy_options(strategy);
            (script, "check", cost, o, Shape::Decision)
        }
        Transform::Forecast { strategy, cost } => {
            let (script, _, o) = strategy_options(strategy);
            (script, "forecast", cost, o, Shape::Decision)
        }
        Transform::Peek { strategy } => {
            let (script, _, o) = strategy_options(strategy);
            (script, "peek", 1, o, Shape::Decision)
        }
        Transform::Reserve { shaper, cost } => {
            let o = shaper.options();
            (
                &SCRIPTS.leaky_bucket,
                "reserve",
                cost,
                Options::nums(&[o.rate_per_sec, o.max_queue_ms]),
                Shape::Reservation,
            )
        }
        Transform::Lease { strategy, cost, want, lifetime_ms } => {
            return lease(key, now, strategy, "lease", cost, want.min(i64::MAX as u64) as i64, lifetime_ms);
        }
        Transform::GiveBack { strategy, units, reset_at } => {
            return lease(key, now, strategy, "return", units, reset_at, 0);
        }
    };
    let mut args = Args::with_capacity(3 + options.count(), 64);
    now_arg(&mut args, now);
    args.arg(mode).arg(cost);
    options.append(&mut args);
    ScriptCall { script, keys: vec![key.to_string()], args, shape }
}

/// The fused call for a multi-dimensional lease: the check's arguments, then `lease` and each
/// dimension's `want, lifetime`.
pub fn multi_lease(rule: Rule, dims: &[DimensionCall<'_>], leases: &[DimensionLease], now: Now) -> ScriptCall {
    let mut call = fused(rule, dims, now);
    call.args.arg("lease");
    for l in leases {
        call.args.arg(l.want.min(i64::MAX as u64)).arg(l.lifetime_ms);
    }
    call.shape = Shape::MultiLease;
    call
}

/// The call for a multi-dimensional check: the fused script (multi.lua), or for one dimension
/// its strategy's own single-key check.
///
/// Why one dimension goes alone: with one dimension `all` and `any` both admit exactly when
/// that dimension allows and commit exactly what its check commits, so the single-key script
/// decides and writes the same (multi.lua runs the same strategy helpers, and
/// `core/tests/redis_dual_path.rs` holds both paths to the in-memory store), while inside
/// Redis it costs about half the fused function: no rule, kind dispatch or per-dimension
/// bookkeeping, a 6-element reply instead of 7 and three fewer arguments. A request of
/// `throttlekit serve` with one descriptor and one limit, the common case, is this call; with
/// a fixed window on the caller's clock (serve's default) in the script's `count` mode, whose
/// reply is one integer ([`WindowCount`]).
pub fn multi(rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> ScriptCall {
    if let [d] = dims {
        let mut call = single_call(d.key, now, &Transform::Check { strategy: d.strategy, cost: d.cost }, true);
        if call.shape == Shape::Decision {
            call.shape = Shape::MultiOfOne;
        }
        return call;
    }
    fused_check(rule, dims, now)
}

/// The fused call (multi.lua) for any number of dimensions.
fn fused(rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> ScriptCall {
    let mut args = Args::with_capacity(3 + dims.len() * 8, 32 + dims.len() * 48);
    now_arg(&mut args, now);
    args.arg(match rule {
        Rule::All => "all",
        Rule::Any => "any",
    })
    .arg(dims.len());
    for d in dims {
        let (_, kind, options) = strategy_options(d.strategy);
        args.arg(kind).arg(d.cost).arg(options.count());
        options.append(&mut args);
    }
    ScriptCall {
        script: &SCRIPTS.multi,
        keys: dims.iter().map(|d| d.key.to_string()).collect(),
        args,
        shape: Shape::Multi,
    }
}

/// [`fused`], with multi.lua's `count` reply when every dimension is a fixed window on the
/// caller's clock ([`WindowCounts`]).
fn fused_check(rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> ScriptCall {
    let mut call = fused(rule, dims, now);
    if let Some(counts) = WindowCounts::of(rule, dims, now) {
        call.args.arg("count");
        call.shape = Shape::WindowCounts(counts);
    }
    call
}

pub(super) fn bad(script: &LoadedScript, value: &Value) -> Error {
    Error::store(format!("unexpected reply from {}: {value:?}", script.name))
}

/// Decodes the script's reply to `call`, for the caller only (the TTLs are the replay mode's).
#[cfg(test)]
pub fn decode_reply(call: &ScriptCall, value: &Value) -> Result<Outcome> {
    decode(call, value).map(|d| d.reply)
}

fn ttl(v: i64) -> Option<i64> {
    (v >= 0).then_some(v)
}

/// A decision from a script's integers, or `None` when they break a decision's invariants
/// (`0 <= remaining <= limit`, `limit >= 1`, retry 0 exactly when allowed): a reply that is
/// not what our scripts send is the store's failure, never a decision. Found by the
/// `redis_reply` fuzz target (`fuzz/regressions/redis_reply/`): `*6 :2 :0 :2 :0 :0 :50` used to
/// decode into a denial with a limit of 0, two remaining and no retry hint.
pub(super) fn decision(f: &[i64]) -> Option<Decision> {
    let d = Decision {
        allowed: f[0] == 1,
        limit: f[1],
        remaining: f[2],
        reset_at: f[3],
        retry_after_ms: f[4],
        fallback: false,
    };
    let sane = matches!(f[0], 0 | 1)
        && d.limit >= 1
        && (0..=d.limit).contains(&d.remaining)
        && d.retry_after_ms >= 0
        && d.allowed == (d.retry_after_ms == 0);
    sane.then_some(d)
}

/// A lease grant from lease.lua's integers, or `None` when they are not one.
fn grant(f: &[i64]) -> Option<crate::lease::Grant> {
    let sane = f[0] >= 0 && f[1] >= 0 && f[3] >= 0 && f[4] >= 0 && (f[0] > 0 || f[1] == 0 || f[3] >= 1);
    sane.then_some(crate::lease::Grant {
        granted: f[0] as u64,
        limit: f[1],
        reset_at: f[2],
        retry_after_ms: f[3],
        expires_in_ms: f[4],
    })
}

/// A reservation from a script's integers, or `None` when they are not one.
fn reservation(f: &[i64]) -> Option<Reservation> {
    (matches!(f[0], 0 | 1) && f[1] >= 0).then_some(Reservation { accepted: f[0] == 1, delay_ms: f[1] })
}

/// Decodes the script's reply to `call` read as a value (replay reads it inside `EXEC`'s reply).
pub fn decode(call: &ScriptCall, value: &Value) -> Result<Decoded> {
    let ints = match value {
        Value::Int(i) => Some((false, vec![*i])),
        Value::Array(items) => items
            .iter()
            .map(|v| if let Value::Int(i) = v { Some(*i) } else { None })
            .collect::<Option<Vec<_>>>()
            .map(|f| (true, f)),
        _ => None,
    };
    let mut ttls = Vec::new();
    let reply = ints.and_then(|(array, f)| decode_ints(call, array, &f, |t| ttls.push(t)));
    Ok(Decoded { reply: reply.ok_or_else(|| bad(call.script, value))?, ttls })
}

/// The reply to `call` from the script's integers (`array`: they came as an array, not as one
/// integer), handing `keep` each key's TTL in `KEYS` order (replay's; a decision alone
/// allocates nothing); `None` when they are no sane reply of the call's shape.
pub(super) fn decode_ints(
    call: &ScriptCall,
    array: bool,
    f: &[i64],
    mut keep: impl FnMut(Option<i64>),
) -> Option<Outcome> {
    let reply = match call.shape {
        Shape::WindowCount(w) if !array && f.len() == 1 => {
            let (d, t) = w.decide(f[0])?;
            keep(t);
            return Some(w.outcome(d));
        }
        Shape::WindowCounts(w) if array => {
            let (reply, ttls) = w.decide(f)?;
            ttls.into_iter().for_each(keep);
            return Some(Outcome::Multi(reply));
        }
        _ if !array => return None,
        Shape::Decision if f.len() == 6 => Outcome::Single(Reply::Decision(decision(f)?)),
        Shape::MultiOfOne if f.len() == 6 => {
            let d = decision(f)?;
            Outcome::Multi(MultiReply { allowed: d.allowed, decisions: vec![d] })
        }
        Shape::Grant if f.len() == 6 => Outcome::Single(Reply::Grant(grant(f)?)),
        Shape::Reservation if f.len() == 3 => {
            keep(ttl(f[2]));
            return Some(Outcome::Single(Reply::Reservation(reservation(f)?)));
        }
        Shape::Multi if f.len() == 1 + 6 * call.keys.len() && matches!(f[0], 0 | 1) => {
            let dims = f[1..].chunks(6);
            let decisions = dims.clone().map(decision).collect::<Option<Vec<_>>>()?;
            dims.for_each(|c| keep(ttl(c[5])));
            return Some(Outcome::Multi(MultiReply { allowed: f[0] == 1, decisions }));
        }
        Shape::MultiLease if f.len() == 1 + 8 * call.keys.len() && matches!(f[0], 0 | 1) => {
            let dims = f[1..].chunks(8);
            let decisions = dims.clone().map(decision).collect::<Option<Vec<_>>>()?;
            let grants = dims
                .clone()
                .map(|c| {
                    (c[6] >= 0 && c[7] >= 0).then_some(crate::lease::Grant {
                        granted: c[6] as u64,
                        limit: c[1],
                        reset_at: c[3],
                        retry_after_ms: c[4],
                        expires_in_ms: c[7],
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            dims.for_each(|c| keep(ttl(c[5])));
            let reply = MultiReply { allowed: f[0] == 1, decisions };
            return Some(Outcome::MultiGrant(MultiGrant { reply, grants }));
        }
        _ => return None,
    };
    // A decision, a multi check of one and a grant: six integers, the TTL last.
    keep(ttl(f[5]));
    Some(reply)
}

#[cfg(test)]
mod tests;
