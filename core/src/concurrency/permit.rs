//! [`Permit`] and [`PermitGuard`]: one admitted request's hold on the limit.
//!
//! A permit is released once: a second release does nothing and says so, which is what a binding
//! needs when a user's `finally` and a garbage collector both get to it. A permit dropped without
//! a release frees its slot as `ignore` (its round trip says nothing reliable) and counts in
//! `leaked`, so a forgotten release shows in the metrics instead of shrinking the limit forever.

use std::sync::Arc;

use super::limiter::Inner;
use super::outcome::Outcome;
use crate::error::{Error, Result};

/// One admitted request's slot in the limit.
#[must_use = "a permit holds a slot until it is released"]
pub struct Permit {
    inner: Arc<Inner>,
    partition: Option<usize>,
    start_ns: u64,
    released: bool,
}

impl Permit {
    pub(super) fn new(inner: Arc<Inner>, partition: Option<usize>, start_ns: u64) -> Permit {
        Permit { inner, partition, start_ns, released: false }
    }

    /// Releases with the round trip measured on the limiter's clock since the grant. Returns
    /// whether this call released it (`false`: it already was).
    pub fn release(&mut self, outcome: Outcome) -> bool {
        if self.released {
            return false;
        }
        let rtt = self.inner.now_ns().saturating_sub(self.start_ns);
        self.finish(outcome, rtt, false);
        true
    }

    /// Releases with a round trip the caller measured, in nanoseconds; a negative one is
    /// `config_invalid` for `rtt` (and the permit stays held).
    pub fn release_with_rtt_ns(&mut self, outcome: Outcome, rtt_ns: i64) -> Result<bool> {
        if rtt_ns < 0 {
            return Err(Error::config("rtt", "must not be negative"));
        }
        if self.released {
            return Ok(false);
        }
        self.finish(outcome, rtt_ns as u64, false);
        Ok(true)
    }

    /// Whether it was released.
    pub fn is_released(&self) -> bool {
        self.released
    }

    /// A guard that releases on drop: with the outcome it is given, or `ignore` when it is
    /// dropped without one (an early return, a `?`, a panic, a cancelled future).
    pub fn guard(self) -> PermitGuard {
        PermitGuard { permit: self }
    }

    fn finish(&mut self, outcome: Outcome, rtt_ns: u64, leaked: bool) {
        self.released = true;
        self.inner.release(self.partition, outcome, rtt_ns, leaked);
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.released {
            self.finish(Outcome::Ignore, 0, true);
        }
    }
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit").field("partition", &self.partition).field("released", &self.released).finish()
    }
}

/// The RAII form of a [`Permit`]: dropped without an outcome, it releases as `ignore` (not
/// counted as leaked: dropping it is how it is meant to be used).
#[must_use = "dropping the guard at once releases the permit"]
#[derive(Debug)]
pub struct PermitGuard {
    permit: Permit,
}

impl PermitGuard {
    /// The request completed: its round trip is a latency sample.
    pub fn success(mut self) {
        self.permit.release(Outcome::Success);
    }

    /// The request timed out or was refused from below: a congestion signal.
    pub fn dropped(mut self) {
        self.permit.release(Outcome::Dropped);
    }

    /// Releases with `outcome`.
    pub fn release(mut self, outcome: Outcome) {
        self.permit.release(outcome);
    }
}

impl Drop for PermitGuard {
    fn drop(&mut self) {
        self.permit.release(Outcome::Ignore);
    }
}
