//! The update rules, one per file, behind one enum.
//!
//! Each rule is a pure function of the current limit, the closed window's [`Summary`] and the
//! no-load round trip: no clock, no lock. The limiter applies the rules common to all of them
//! (slow start, the in-flight peak cap, the bounds) in `limiter.rs`.

use super::aimd::Aimd;
use super::config::{AdaptiveConfig, AlgorithmKind};
use super::gradient2::Gradient2;
use super::vegas::Vegas;
use super::window::Summary;
use crate::error::Result;

/// One rule with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Algorithm {
    Fixed,
    Aimd(Aimd),
    Vegas(Vegas),
    Gradient2(Gradient2),
}

/// What a window did to the limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Update {
    /// The new estimate, before the common caps.
    pub limit: f64,
    /// Whether the window showed congestion (it ends slow start).
    pub congested: bool,
}

/// The window as a rule sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Input {
    pub limit: f64,
    pub window: Summary,
    /// The no-load round trip (ns), known once a window had a successful sample.
    pub baseline: f64,
}

impl Input {
    /// Whether the limit was used: peers leave it alone when less than half of it was in flight
    /// (an application-limited window says nothing about the service's capacity).
    pub fn utilized(&self) -> bool {
        self.window.peak as f64 * 2.0 >= self.limit
    }
}

impl Algorithm {
    pub(crate) fn resolve(config: &AdaptiveConfig) -> Result<Algorithm> {
        Ok(match config.algorithm {
            AlgorithmKind::Fixed => {
                super::fixed::reject_options(config)?;
                Algorithm::Fixed
            }
            AlgorithmKind::Aimd => Algorithm::Aimd(Aimd::from_config(config)?),
            AlgorithmKind::Vegas => Algorithm::Vegas(Vegas::from_config(config)?),
            AlgorithmKind::Gradient2 => Algorithm::Gradient2(Gradient2::from_config(config)?),
        })
    }

    pub(crate) fn update(&self, input: &Input) -> Update {
        match self {
            Algorithm::Fixed => Update { limit: input.limit, congested: false },
            Algorithm::Aimd(a) => a.update(input),
            Algorithm::Vegas(v) => v.update(input),
            Algorithm::Gradient2(g) => g.update(input),
        }
    }

    pub(crate) fn is_fixed(&self) -> bool {
        matches!(self, Algorithm::Fixed)
    }
}
