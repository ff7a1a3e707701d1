//! What calls return: `Decision`, `Reservation` and `MultiDecision`, as uniffi records (Kotlin
//! data classes, Ruby structs), copied from core's structs field by field; nothing is computed.

/// The result of one check. A denied request is a `Decision` with `allowed == false`, not an
/// error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Record)]
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
    /// True when the store was unavailable and the fail policy decided without any state.
    pub fallback: bool,
}

impl From<throttlekit::Decision> for Decision {
    fn from(d: throttlekit::Decision) -> Self {
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

/// A shaper's answer: a departure slot and how long to wait for it, or a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Reservation {
    /// Whether the request got a departure slot.
    pub accepted: bool,
    /// Accepted: how long to wait before departing, ms. Refused: by how much the queue is too
    /// long.
    pub delay_ms: i64,
}

impl From<throttlekit::Reservation> for Reservation {
    fn from(r: throttlekit::Reservation) -> Self {
        Reservation { accepted: r.accepted, delay_ms: r.delay_ms }
    }
}

/// A multi limiter's answer: the binding dimension's decision and name, and every dimension's
/// own decision in declaration order.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct MultiDecision {
    /// The binding dimension's decision (the one to report to the caller).
    pub decision: Decision,
    /// The binding dimension's name.
    pub binding: String,
    /// Every dimension's decision, in declaration order.
    pub dimensions: Vec<Decision>,
}

impl From<throttlekit::MultiDecision> for MultiDecision {
    fn from(m: throttlekit::MultiDecision) -> Self {
        MultiDecision {
            decision: m.decision.into(),
            binding: m.binding,
            dimensions: m.dimensions.into_iter().map(Decision::from).collect(),
        }
    }
}

/// The counters of a limiter (a multi limiter: its combined decisions; a shaper: reservations
/// accepted as allowed, rejected as denied; core's `MetricsSnapshot`), all cumulative since it
/// was made.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Metrics {
    /// Whether the limiter counts at all (made with `metrics = true`).
    pub enabled: bool,
    /// Checks the store allowed.
    pub allowed: u64,
    /// Checks the store denied.
    pub denied: u64,
    /// Checks the fail policy allowed because the store was unavailable.
    pub fallback_allowed: u64,
    /// Checks the fail policy denied because the store was unavailable.
    pub fallback_denied: u64,
    /// Peeks answered (a failed one counts in `errors`), apart from the checks.
    pub peeks: u64,
    /// Forecasts answered (a failed one counts in `errors`), apart from the checks.
    pub forecasts: u64,
    /// Failed checks by error code (`config_invalid`, ...), every code listed when enabled.
    pub errors: std::collections::HashMap<String, u64>,
    /// Upper bounds of the latency buckets of calls to a remote store, µs.
    pub latency_bounds_us: Vec<u64>,
    /// Calls per bucket: `latency_counts[i]` took at most `latency_bounds_us[i]` µs (and more
    /// than the bound before); the last counts the rest.
    pub latency_counts: Vec<u64>,
    /// Sum of the timed calls' latencies, µs.
    pub latency_sum_us: u64,
}

impl Metrics {
    /// A snapshot of a limiter's, multi limiter's or shaper's metrics (`None`: metrics off).
    pub(crate) fn from_core(metrics: Option<&std::sync::Arc<throttlekit::metrics::LimiterMetrics>>) -> Metrics {
        let enabled = metrics.is_some();
        let s = metrics.map(|m| m.snapshot()).unwrap_or_default();
        Metrics {
            enabled,
            allowed: s.allowed,
            denied: s.denied,
            fallback_allowed: s.fallback_allowed,
            fallback_denied: s.fallback_denied,
            peeks: s.peeks,
            forecasts: s.forecasts,
            errors: s.errors.iter().map(|(code, n)| (code.as_str().to_string(), *n)).collect(),
            latency_bounds_us: throttlekit::metrics::LATENCY_BOUNDS_US.to_vec(),
            latency_counts: s.latency_counts,
            latency_sum_us: s.latency_sum_us,
        }
    }
}
