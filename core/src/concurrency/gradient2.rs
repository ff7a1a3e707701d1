//! `gradient2`: the limit follows the ratio of the no-load round trip to the current one.
//!
//! Per window: `gradient = clamp(tolerance × baseline / latency, 0.5, 1)`, computed from the
//! successful samples' percentile and halved when the window's percentile lands among the drops
//! (a timeout is the strongest congestion signal, and Netflix's Gradient2 ignores it). The new
//! estimate is `limit × gradient + √limit` (room for a small queue), and the limit moves a
//! `smoothing` share of the way to it when it is lower. An unused limit (less than half in flight) with no
//! congestion stays. The baseline is the limiter's, which sustained latency cannot raise: with
//! Netflix's long average as the baseline, steadily high latency makes the gradient 1 and the
//! queue allowance ratchets the limit to its maximum (Netflix/concurrency-limits PR #134, #137).
//! Only decreases are smoothed: growth takes the whole step, so capacity that appears is used
//! within a few windows.

use super::algorithm::{Input, Update};
use super::config::{AdaptiveConfig, AlgorithmKind, check_range, option_for};
use crate::error::Result;

/// Gradient2's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Gradient2 {
    pub tolerance: f64,
    pub smoothing: f64,
}

impl Gradient2 {
    pub(crate) fn from_config(c: &AdaptiveConfig) -> Result<Gradient2> {
        option_for(c, "backoff", c.backoff, &[AlgorithmKind::Aimd])?;
        option_for(c, "alpha", c.alpha, &[AlgorithmKind::Vegas])?;
        option_for(c, "beta", c.beta, &[AlgorithmKind::Vegas])?;
        let tolerance = check_range("tolerance", c.tolerance.unwrap_or(1.5), 1.0, f64::MAX)?;
        let smoothing = check_range(
            "smoothing",
            option_for(c, "smoothing", c.smoothing, &[AlgorithmKind::Gradient2])?.unwrap_or(0.5),
            0.0,
            1.0,
        )?;
        Ok(Gradient2 { tolerance, smoothing })
    }

    pub(crate) fn update(&self, input: &Input) -> Update {
        let limit = input.limit;
        let mut gradient = match input.window.success_latency {
            Some(p) if p > 0.0 => (self.tolerance * input.baseline / p).clamp(0.5, 1.0),
            _ => 0.5,
        };
        if input.window.latency.is_none() {
            gradient *= 0.5;
        }
        let congested = gradient < 1.0;
        if !congested && !input.utilized() {
            return Update { limit, congested };
        }
        let target = limit * gradient + limit.sqrt();
        let weight = if target < limit { self.smoothing } else { 1.0 };
        Update { limit: limit + weight * (target - limit), congested }
    }
}
