//! The Postgres store's calls without I/O: a transform becomes a [`StepCall`] (the parameters of
//! the one statement, see [`super::schema::Statements`]), and the row that statement returns
//! becomes the store's [`Reply`]. The driver (`super::store`) only sends and receives; a binding
//! that speaks Postgres on its own event loop needs only these two functions.

use crate::algorithms::quota::Quota;
use crate::decision::{Decision, Reservation};
use crate::error::{Error, Result};
use crate::lease::Grant;
use crate::store::{DimensionCall, DimensionLease, MultiGrant, MultiReply, Now, Reply, Rule, Transform};
use crate::strategy::Strategy;

/// What `throttlekit_v1_step` computes (its `op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Decide and consume when allowed.
    Check = 0,
    /// Decide without consuming.
    Forecast = 1,
    /// Current capacity.
    Peek = 2,
    /// A shaper's reservation.
    Reserve = 3,
    /// A lease of credits (the leased mode).
    Lease = 4,
    /// A give-back of unspent credits.
    GiveBack = 5,
}

/// The parameters of one step statement: `$2` .. `$7` of [`super::schema::Statements::step`].
#[derive(Clone, Debug, PartialEq)]
pub struct StepCall {
    /// The caller's epoch ms, or `None`: the server's clock, read after the row lock.
    pub now: Option<i64>,
    /// The transition.
    pub op: Op,
    /// The algorithm's number in `functions.sql`.
    pub algo: i16,
    /// The algorithm's four parameters (derived values computed here, so they are Rust's bits),
    /// then a lease's `want` and lifetime, or a give-back's `reset_at`.
    pub params: [f64; 6],
    /// Units requested.
    pub cost: i64,
}

/// The parameters of one multi statement ([`super::schema::Statements::multi`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MultiCall {
    /// Each dimension's full key, in declaration order.
    pub keys: Vec<String>,
    /// Each dimension's algorithm number.
    pub algos: Vec<i16>,
    /// Four parameters per dimension, flattened.
    pub params: Vec<f64>,
    /// Each dimension's cost.
    pub costs: Vec<i64>,
    /// 0 `all`, 1 `any`.
    pub rule: i16,
    /// As [`StepCall::now`].
    pub now: Option<i64>,
    /// A multi lease's units asked per dimension (`None`: a check).
    pub wants: Option<Vec<i64>>,
    /// A multi lease's credit lifetimes per dimension (ms, 0: until the reset).
    pub lifetimes: Option<Vec<i64>>,
}

fn epoch(now: Now) -> Option<i64> {
    match now {
        Now::At(t) => Some(t),
        Now::Server => None,
    }
}

/// A cost as the statement's `bigint` (a larger cost is denied anyway: it exceeds every limit).
fn cost_of(cost: u64) -> i64 {
    i64::try_from(cost).unwrap_or(i64::MAX)
}

/// The algorithm number and parameters of `strategy` at `now` (a quota's calendar period is
/// computed here, so it needs the caller's clock).
fn shape(strategy: &Strategy, now: Option<i64>) -> Result<(i16, [f64; 4])> {
    if let Some(g) = strategy.as_gcra() {
        let t = g.period_ms / g.limit;
        return Ok((1, [t, t * g.burst, g.burst, 0.0]));
    }
    if let Some(b) = strategy.as_token_bucket() {
        return Ok((2, [b.capacity, b.refill_per_sec / 1000.0, 0.0, 0.0]));
    }
    if let Some(w) = strategy.as_fixed_window() {
        return Ok((3, [w.limit as f64, w.window_ms as f64, 0.0, 0.0]));
    }
    if let Some(l) = strategy.as_sliding_window_log() {
        return Ok((5, [l.limit as f64, l.window_ms as f64, 0.0, 0.0]));
    }
    let sliding = |w: &crate::algorithms::sliding_window::SlidingWindow| {
        (4, [w.limit, w.window_ms, w.buckets as f64, w.window_ms / w.buckets as f64])
    };
    if let Some(w) = strategy.as_sliding_window() {
        return Ok(sliding(w));
    }
    match strategy.as_quota() {
        Some(Quota::Rolling(w)) => Ok(sliding(w)),
        Some(Quota::Periodic { limit, cadence, .. }) => {
            let now = now.ok_or_else(|| {
                Error::not_implemented(
                    "the server clock for a calendar or fixed quota on Postgres (use the caller's clock)",
                )
            })?;
            let p = Quota::period(cadence, now);
            Ok((6, [*limit as f64, p.start as f64, p.end as f64, 0.0]))
        }
        None => Err(Error::not_implemented("this strategy on Postgres")),
    }
}

/// The statement parameters of `transform` at `now`.
pub fn prepare(transform: &Transform<'_>, now: Now) -> Result<StepCall> {
    let now = epoch(now);
    let (op, strategy, cost) = match *transform {
        Transform::Check { strategy, cost } => (Op::Check, strategy, cost),
        Transform::Forecast { strategy, cost } => (Op::Forecast, strategy, cost),
        Transform::Peek { strategy } => (Op::Peek, strategy, 1),
        Transform::Reserve { shaper, cost } => {
            let t = 1000.0 / shaper.rate_per_sec;
            return Ok(StepCall {
                now,
                op: Op::Reserve,
                algo: 7,
                params: [t, shaper.max_queue_ms, 0.0, 0.0, 0.0, 0.0],
                cost: cost_of(cost),
            });
        }
        Transform::Lease { strategy, cost, want, lifetime_ms } => {
            let (algo, [a, b, c, d]) = shape(strategy, now)?;
            let params = [a, b, c, d, cost_of(want) as f64, lifetime_ms as f64];
            return Ok(StepCall { now, op: Op::Lease, algo, params, cost: cost_of(cost) });
        }
        Transform::GiveBack { strategy, units, reset_at } => {
            let (algo, [a, b, c, d]) = shape(strategy, now)?;
            let params = [a, b, c, d, 0.0, reset_at as f64];
            return Ok(StepCall { now, op: Op::GiveBack, algo, params, cost: cost_of(units) });
        }
    };
    let (algo, [a, b, c, d]) = shape(strategy, now)?;
    Ok(StepCall { now, op, algo, params: [a, b, c, d, 0.0, 0.0], cost: cost_of(cost) })
}

fn field(r: &[i64], i: usize) -> Result<i64> {
    r.get(i).copied().ok_or_else(|| Error::store(format!("a reply of {} fields from Postgres", r.len())))
}

fn decision(r: &[i64]) -> Result<Decision> {
    Ok(Decision {
        allowed: field(r, 0)? == 1,
        limit: field(r, 1)?,
        remaining: field(r, 2)?,
        reset_at: field(r, 3)?,
        retry_after_ms: field(r, 4)?,
        fallback: false,
    })
}

/// The reply of `call` from the statement's returned `r` column.
pub fn read(call: &StepCall, r: &[i64]) -> Result<Reply> {
    match call.op {
        Op::Reserve => Ok(Reply::Reservation(Reservation { accepted: field(r, 0)? == 1, delay_ms: field(r, 1)? })),
        Op::Lease | Op::GiveBack => Ok(Reply::Grant(Grant {
            granted: u64::try_from(field(r, 0)?).unwrap_or(0),
            limit: field(r, 1)?,
            reset_at: field(r, 2)?,
            retry_after_ms: field(r, 3)?,
            expires_in_ms: field(r, 4)?,
        })),
        _ => Ok(Reply::Decision(decision(r)?)),
    }
}

/// The statement parameters of a multi-dimensional check, or with `leases` (one per dimension)
/// a multi-dimensional lease.
pub fn prepare_multi(
    rule: Rule,
    dims: &[DimensionCall<'_>],
    leases: Option<&[DimensionLease]>,
    now: Now,
) -> Result<MultiCall> {
    if leases.is_some_and(|l| l.len() != dims.len()) {
        return Err(Error::config("leases", "must give one lease per dimension"));
    }
    let now = epoch(now);
    let mut call = MultiCall {
        keys: Vec::with_capacity(dims.len()),
        algos: Vec::with_capacity(dims.len()),
        params: Vec::with_capacity(4 * dims.len()),
        costs: Vec::with_capacity(dims.len()),
        rule: match rule {
            Rule::All => 0,
            Rule::Any => 1,
        },
        now,
        wants: leases.map(|l| l.iter().map(|l| cost_of(l.want)).collect()),
        lifetimes: leases.map(|l| l.iter().map(|l| l.lifetime_ms).collect()),
    };
    for d in dims {
        let (algo, params) = shape(d.strategy, now)?;
        call.keys.push(d.key.to_string());
        call.algos.push(algo);
        call.params.extend_from_slice(&params);
        call.costs.push(cost_of(d.cost));
    }
    Ok(call)
}

/// The multi reply from the statement's returned array: the admission, then five fields a
/// dimension.
pub fn read_multi(call: &MultiCall, r: &[i64]) -> Result<MultiReply> {
    let n = call.keys.len();
    if r.len() != 1 + 5 * n + if call.wants.is_some() { 5 * n } else { 0 } {
        return Err(Error::store(format!("a multi reply of {} fields from Postgres", r.len())));
    }
    let decisions = r[1..1 + 5 * n].chunks(5).map(decision).collect::<Result<Vec<_>>>()?;
    Ok(MultiReply { decisions, allowed: r[0] == 1 })
}

/// The multi lease reply: [`read_multi`]'s, then what each dimension committed (a dimension
/// that did not commit grants nothing and carries its planned decision's limit and retry, as
/// `store::multi_apply` says).
pub fn read_multi_lease(call: &MultiCall, r: &[i64]) -> Result<MultiGrant> {
    let reply = read_multi(call, r)?;
    let n = call.keys.len();
    let grants = r[1 + 5 * n..]
        .chunks(5)
        .zip(&reply.decisions)
        .map(|(g, d)| match g[0] {
            0 => Grant {
                granted: 0,
                limit: d.limit,
                reset_at: d.reset_at,
                retry_after_ms: d.retry_after_ms,
                expires_in_ms: 0,
            },
            _ => Grant {
                granted: u64::try_from(g[0]).unwrap_or(0),
                limit: g[1],
                reset_at: g[2],
                retry_after_ms: g[3],
                expires_in_ms: g[4],
            },
        })
        .collect();
    Ok(MultiGrant { reply, grants })
}
