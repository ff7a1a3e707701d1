//! `fixed`: the limit is `initialLimit` and never moves. The control for the adaptive rules, and
//! a plain concurrency cap (with partitions and waiting) where the capacity is known.

use super::config::AdaptiveConfig;
use crate::error::{Error, Result};

/// A fixed limit takes none of the adaptive options: naming one is a mistake.
pub(crate) fn reject_options(config: &AdaptiveConfig) -> Result<()> {
    let named = [
        ("tolerance", config.tolerance.is_some()),
        ("backoff", config.backoff.is_some()),
        ("alpha", config.alpha.is_some()),
        ("beta", config.beta.is_some()),
        ("smoothing", config.smoothing.is_some()),
        ("slowStart", config.slow_start == Some(true)),
    ];
    match named.into_iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(Error::config(field, "does not apply to fixed")),
        None => Ok(()),
    }
}
