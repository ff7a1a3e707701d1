//! `vegas`: TCP Vegas's queue estimate.
//!
//! Per window, the requests queued beyond the service's own work are estimated as `queue =
//! limit × (1 − baseline / latency)`. With `a = alpha × log10(limit)` and `b = beta ×
//! log10(limit)` (log10 taken as at least 1): `queue < a` grows the limit by `b` (if it was
//! used), `queue > b` shrinks it by the excess `queue − b` (at most half), and in between it
//! stays. A window whose percentile lands among the drops halves it. The no-load round trip is
//! the limiter's baseline, which loaded windows cannot raise (Netflix/concurrency-limits#165).

use super::algorithm::{Input, Update};
use super::config::{AdaptiveConfig, AlgorithmKind, check_range, option_for};
use crate::error::{Error, Result};

/// Vegas's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Vegas {
    pub alpha: f64,
    pub beta: f64,
}

impl Vegas {
    pub(crate) fn from_config(c: &AdaptiveConfig) -> Result<Vegas> {
        let only = [AlgorithmKind::Vegas];
        option_for(c, "tolerance", c.tolerance, &[AlgorithmKind::Aimd, AlgorithmKind::Gradient2])?;
        option_for(c, "backoff", c.backoff, &[AlgorithmKind::Aimd])?;
        option_for(c, "smoothing", c.smoothing, &[AlgorithmKind::Gradient2])?;
        let alpha = check_range("alpha", option_for(c, "alpha", c.alpha, &only)?.unwrap_or(3.0), 0.0, f64::MAX)?;
        let beta = check_range("beta", option_for(c, "beta", c.beta, &only)?.unwrap_or(6.0), 0.0, f64::MAX)?;
        if beta < alpha {
            return Err(Error::config("beta", "must be at least alpha"));
        }
        Ok(Vegas { alpha, beta })
    }

    pub(crate) fn update(&self, input: &Input) -> Update {
        let limit = input.limit;
        let Some(latency) = input.window.latency else {
            return Update { limit: limit / 2.0, congested: true };
        };
        let queue = limit * (1.0 - input.baseline / latency).max(0.0);
        let scale = limit.log10().max(1.0);
        let (a, b) = (self.alpha * scale, self.beta * scale);
        if queue > b {
            Update { limit: limit - (queue - b).min(limit / 2.0), congested: true }
        } else if queue < a && input.utilized() {
            Update { limit: limit + b, congested: false }
        } else {
            Update { limit, congested: false }
        }
    }
}
