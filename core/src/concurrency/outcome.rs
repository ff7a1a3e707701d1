//! What a permit's release says about the request, and what a rejection carries.

use crate::error::{Error, Result};

/// How a request that held a permit ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It completed: its round trip is a latency sample.
    Success,
    /// Not a latency signal (a client error, a cancelled request, a cache hit).
    Ignore,
    /// The service could not do it in time (a timeout, a 503 from below): a congestion signal.
    Dropped,
}

impl Outcome {
    /// The stable name (`"success"`, `"ignore"`, `"dropped"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Ignore => "ignore",
            Outcome::Dropped => "dropped",
        }
    }

    /// Parses the stable name; anything else is `config_invalid` for `outcome`.
    pub fn parse(name: &str) -> Result<Outcome> {
        match name {
            "success" => Ok(Outcome::Success),
            "ignore" => Ok(Outcome::Ignore),
            "dropped" => Ok(Outcome::Dropped),
            _ => Err(Error::config("outcome", "must be success, ignore or dropped")),
        }
    }
}

/// A refused `try_acquire` (or an `acquire` that timed out): an ordinary outcome, not an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The limit when the request was refused.
    pub limit: u32,
    /// The requests in flight then.
    pub inflight: u32,
    /// A hint for a client's retry: the latest window's latency percentile, in milliseconds
    /// (1000 before any window has closed).
    pub retry_after_ms: u64,
}

impl Rejection {
    /// The `Retry-After` header's value: whole seconds, rounded up, at least 1.
    pub fn retry_after_secs(&self) -> u64 {
        self.retry_after_ms.div_ceil(1000).max(1)
    }
}
