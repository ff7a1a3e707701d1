//! The service's counters, rendered in the Prometheus text format at `/metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::decide::{Code, DecideError, Outcome};

/// Counters since start.
#[derive(Debug, Default)]
pub struct Metrics {
    grpc_requests: AtomicU64,
    http_requests: AtomicU64,
    descriptors_ok: AtomicU64,
    descriptors_over: AtomicU64,
    descriptors_shadow_over: AtomicU64,
    responses_over: AtomicU64,
    fallbacks: AtomicU64,
    errors_invalid: AtomicU64,
    errors_unavailable: AtomicU64,
    errors_internal: AtomicU64,
    errors_deadline: AtomicU64,
    reloads_ok: AtomicU64,
    reloads_failed: AtomicU64,
    decide_us_sum: AtomicU64,
    decide_count: AtomicU64,
}

/// Which door a request came through.
#[derive(Clone, Copy, Debug)]
pub enum Door {
    /// gRPC `ShouldRateLimit`.
    Grpc,
    /// HTTP `POST /json`.
    Http,
}

impl Metrics {
    /// Counts one request and its result.
    pub fn record(&self, door: Door, result: &Result<Outcome, DecideError>, micros: u64) {
        match door {
            Door::Grpc => &self.grpc_requests,
            Door::Http => &self.http_requests,
        }
        .fetch_add(1, Relaxed);
        self.decide_us_sum.fetch_add(micros, Relaxed);
        self.decide_count.fetch_add(1, Relaxed);
        match result {
            Ok(o) => {
                for s in &o.statuses {
                    match s.code {
                        Code::Ok => &self.descriptors_ok,
                        Code::OverLimit => &self.descriptors_over,
                    }
                    .fetch_add(1, Relaxed);
                }
                self.descriptors_shadow_over.fetch_add(o.shadow_over as u64, Relaxed);
                if o.overall == Code::OverLimit {
                    self.responses_over.fetch_add(1, Relaxed);
                }
                if o.fallback {
                    self.fallbacks.fetch_add(1, Relaxed);
                }
            }
            Err(DecideError::Invalid(_)) => {
                self.errors_invalid.fetch_add(1, Relaxed);
            }
            Err(DecideError::Unavailable(_)) => {
                self.errors_unavailable.fetch_add(1, Relaxed);
            }
            Err(DecideError::Internal(_)) => {
                self.errors_internal.fetch_add(1, Relaxed);
            }
        }
    }

    /// Counts a request that ran out of time.
    pub fn deadline(&self) {
        self.errors_deadline.fetch_add(1, Relaxed);
    }

    /// Counts a config reload.
    pub fn reload(&self, ok: bool) {
        if ok { &self.reloads_ok } else { &self.reloads_failed }.fetch_add(1, Relaxed);
    }

    /// The Prometheus text exposition; `limits` is the loaded config's limit count.
    pub fn render(&self, limits: usize, generation: u64) -> String {
        let mut s = String::new();
        let mut family = |name: &str, kind: &str, help: &str, rows: &[(&str, u64)]| {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, v) in rows {
                let _ = writeln!(s, "{name}{labels} {v}");
            }
        };
        let g = |a: &AtomicU64| a.load(Relaxed);
        family(
            "throttlekit_serve_requests_total",
            "counter",
            "ShouldRateLimit requests by door.",
            &[("{door=\"grpc\"}", g(&self.grpc_requests)), ("{door=\"http\"}", g(&self.http_requests))],
        );
        family(
            "throttlekit_serve_descriptors_total",
            "counter",
            "Descriptor statuses by code (shadow_over: over a shadow-mode limit, answered OK).",
            &[
                ("{code=\"ok\"}", g(&self.descriptors_ok)),
                ("{code=\"over_limit\"}", g(&self.descriptors_over)),
                ("{code=\"shadow_over\"}", g(&self.descriptors_shadow_over)),
            ],
        );
        family(
            "throttlekit_serve_over_limit_responses_total",
            "counter",
            "Responses whose overall code was OVER_LIMIT.",
            &[("", g(&self.responses_over))],
        );
        family(
            "throttlekit_serve_fail_policy_total",
            "counter",
            "Responses the fail policy answered because the store could not.",
            &[("", g(&self.fallbacks))],
        );
        family(
            "throttlekit_serve_errors_total",
            "counter",
            "Requests answered with an error, by kind.",
            &[
                ("{kind=\"invalid_argument\"}", g(&self.errors_invalid)),
                ("{kind=\"unavailable\"}", g(&self.errors_unavailable)),
                ("{kind=\"internal\"}", g(&self.errors_internal)),
                ("{kind=\"deadline_exceeded\"}", g(&self.errors_deadline)),
            ],
        );
        family(
            "throttlekit_serve_config_reloads_total",
            "counter",
            "Config reloads by result (a failed one keeps the previous config).",
            &[("{result=\"ok\"}", g(&self.reloads_ok)), ("{result=\"error\"}", g(&self.reloads_failed))],
        );
        family("throttlekit_serve_config_limits", "gauge", "Limits in the loaded config.", &[("", limits as u64)]);
        family("throttlekit_serve_config_generation", "gauge", "Configs loaded since start.", &[("", generation)]);
        family(
            "throttlekit_serve_decide_seconds",
            "summary",
            "Time to decide a request (store round trip included).",
            &[],
        );
        let _ = writeln!(s, "throttlekit_serve_decide_seconds_sum {}", g(&self.decide_us_sum) as f64 / 1e6);
        let _ = writeln!(s, "throttlekit_serve_decide_seconds_count {}", g(&self.decide_count));
        s
    }
}
