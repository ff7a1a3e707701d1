//! What checks return: [`Decision`], the multi limiter's [`MultiDecision`] and the shaper's
//! [`Reservation`], as plain JS objects (the core's structs, field for field, in camelCase).

use napi_derive::napi;

/// The result of one check. Every number is an integer (epoch ms for `resetAt`).
#[napi(object, object_from_js = false)]
#[derive(Clone, Copy)]
pub struct Decision {
    /// Whether the request was admitted (and, for a check, consumed).
    pub allowed: bool,
    /// The effective ceiling: GCRA's burst, a token bucket's capacity, a window's limit.
    pub limit: i64,
    /// Whole units still admissible; never negative.
    pub remaining: i64,
    /// Epoch milliseconds at which the limit is fully replenished.
    pub reset_at: i64,
    /// 0 when allowed; otherwise at least 1: how long until the same request could succeed.
    pub retry_after_ms: i64,
    /// Present (and `true`) only when the store was unavailable and the fail policy decided
    /// without consulting any state.
    pub fallback: Option<bool>,
}

impl From<throttlekit::Decision> for Decision {
    #[inline]
    fn from(d: throttlekit::Decision) -> Decision {
        Decision {
            allowed: d.allowed,
            limit: d.limit,
            remaining: d.remaining,
            reset_at: d.reset_at,
            retry_after_ms: d.retry_after_ms,
            fallback: d.fallback.then_some(true),
        }
    }
}

/// The result of a multi-dimensional check: the binding dimension's decision, its name, and
/// every dimension's own decision in declaration order.
#[napi(object, object_from_js = false)]
pub struct MultiDecision {
    /// Whether the request was admitted under the rule.
    pub allowed: bool,
    /// The binding dimension's limit.
    pub limit: i64,
    /// The binding dimension's remaining units.
    pub remaining: i64,
    /// The binding dimension's reset time (epoch ms).
    pub reset_at: i64,
    /// 0 when admitted; otherwise the binding dimension's wait.
    pub retry_after_ms: i64,
    /// Present (and `true`) only for a fail-policy decision.
    pub fallback: Option<bool>,
    /// The name of the dimension that decided.
    pub binding: String,
    /// Every dimension's decision, in declaration order.
    pub dimensions: Vec<Decision>,
}

impl From<throttlekit::MultiDecision> for MultiDecision {
    fn from(m: throttlekit::MultiDecision) -> MultiDecision {
        let d = Decision::from(m.decision);
        MultiDecision {
            allowed: d.allowed,
            limit: d.limit,
            remaining: d.remaining,
            reset_at: d.reset_at,
            retry_after_ms: d.retry_after_ms,
            fallback: d.fallback,
            binding: m.binding,
            dimensions: m.dimensions.into_iter().map(Decision::from).collect(),
        }
    }
}

/// The shaper's answer: an accepted request waits `delayMs` before departing; a rejected one
/// would have had to wait longer than `maxQueueMs`, and `delayMs` says by how much.
#[napi(object, object_from_js = false)]
#[derive(Clone, Copy)]
pub struct Reservation {
    /// Whether the request got a departure slot.
    pub accepted: bool,
    /// Accepted: how long to wait before departing. Rejected: by how much the queue is too long.
    pub delay_ms: i64,
}

impl From<throttlekit::Reservation> for Reservation {
    fn from(r: throttlekit::Reservation) -> Reservation {
        Reservation { accepted: r.accepted, delay_ms: r.delay_ms }
    }
}
