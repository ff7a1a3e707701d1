//! Plain-data results: [`tk_decision`] and [`tk_reservation`]. Caller-owned structs, filled
//! through out-parameters; nothing inside them points anywhere, so there is nothing to free.

use throttlekit::{Decision, Reservation};

/// The result of a check, peek or forecast (core's `Decision`, field for field).
///
/// Ownership: a plain struct the caller allocates (usually on the stack) and passes by pointer;
/// throttlekit only writes it, and only when the call returns `TK_RESULT_OK`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tk_decision {
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
    /// True when the store was unavailable and the fail policy decided without any state.
    pub fallback: bool,
}

impl From<Decision> for tk_decision {
    fn from(d: Decision) -> tk_decision {
        tk_decision {
            allowed: d.allowed,
            limit: d.limit,
            remaining: d.remaining,
            reset_at: d.reset_at,
            retry_after_ms: d.retry_after_ms,
            fallback: d.fallback,
        }
    }
}

/// A decision a caller hands back (to render its HTTP problem body).
impl From<tk_decision> for Decision {
    fn from(d: tk_decision) -> Decision {
        Decision {
            allowed: d.allowed,
            limit: d.limit,
            remaining: d.remaining,
            reset_at: d.reset_at,
            retry_after_ms: d.retry_after_ms,
            fallback: d.fallback,
        }
    }
}

/// The shaper's answer (core's `Reservation`).
///
/// Ownership: caller-allocated plain data, written only on `TK_RESULT_OK`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tk_reservation {
    /// Whether the request got a departure slot.
    pub accepted: bool,
    /// Accepted: how long to wait before departing. Rejected: by how much the queue is too long.
    pub delay_ms: i64,
}

impl From<Reservation> for tk_reservation {
    fn from(r: Reservation) -> tk_reservation {
        tk_reservation { accepted: r.accepted, delay_ms: r.delay_ms }
    }
}
