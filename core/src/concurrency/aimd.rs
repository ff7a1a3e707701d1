//! `aimd`: additive increase, multiplicative decrease.
//!
//! Per window: congested when the percentile lands among the drops or exceeds `tolerance` times
//! the no-load round trip; then `limit × backoff`. Otherwise, if the limit was used, `limit +
//! √limit` (a window is about one round trip, so this is TCP's additive increase with a step that
//! scales, so 10 → 40 takes a few windows, not thirty). Peers' AIMD compares each sample with an
//! absolute timeout: a service at 10 ms never reaches a 5 s timeout, so the limit only grows.

use super::algorithm::{Input, Update};
use super::config::{AdaptiveConfig, AlgorithmKind, check_range, option_for};
use crate::error::Result;

/// AIMD's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Aimd {
    pub tolerance: f64,
    pub backoff: f64,
}

impl Aimd {
    pub(crate) fn from_config(c: &AdaptiveConfig) -> Result<Aimd> {
        let only = [AlgorithmKind::Aimd];
        option_for(c, "alpha", c.alpha, &[AlgorithmKind::Vegas])?;
        option_for(c, "beta", c.beta, &[AlgorithmKind::Vegas])?;
        option_for(c, "smoothing", c.smoothing, &[AlgorithmKind::Gradient2])?;
        let tolerance = check_range("tolerance", c.tolerance.unwrap_or(2.0), 1.0, f64::MAX)?;
        let backoff = check_range("backoff", option_for(c, "backoff", c.backoff, &only)?.unwrap_or(0.9), 0.0, 1.0)?;
        if backoff >= 1.0 {
            return Err(crate::Error::config("backoff", "must be below 1"));
        }
        Ok(Aimd { tolerance, backoff })
    }

    pub(crate) fn update(&self, input: &Input) -> Update {
        let limit = input.limit;
        let congested = match input.window.latency {
            None => true,
            Some(p) => p > self.tolerance * input.baseline,
        };
        if congested {
            Update { limit: limit * self.backoff, congested }
        } else if input.utilized() {
            Update { limit: limit + limit.sqrt(), congested }
        } else {
            Update { limit, congested }
        }
    }
}
