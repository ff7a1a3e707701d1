//! The one error type: each core [`ErrorCode`] is one case, and every case carries the stable
//! `code` string, the message and the retry hint, so a caller can branch on `e.code` in Kotlin
//! and Ruby exactly as in every other binding.

use std::fmt;

use throttlekit::ErrorCode;

/// A throttlekit failure. `code` is the stable reason (`"config_invalid"`, ...); `detail` is
/// the human-readable message (not stable: do not match on it); `retry_after_ms` is a retry
/// hint when the error knows one (`queue_full`, `rate_limit_exceeded`).
///
/// A denied request is not an error: it is a `Decision` with `allowed == false`.
#[derive(Debug, uniffi::Error)]
pub enum ThrottleKitError {
    /// An option, a cost or another argument is out of its domain (code `config_invalid`).
    ConfigInvalid { code: String, detail: String, retry_after_ms: Option<i64> },
    /// The store could not answer: connection refused, timeout (code `store_unavailable`).
    StoreUnavailable { code: String, detail: String, retry_after_ms: Option<i64> },
    /// A request was refused with an error instead of a denied decision (code `rate_limit_exceeded`).
    RateLimitExceeded { code: String, detail: String, retry_after_ms: Option<i64> },
    /// The shaper's wait would exceed `max_queue_ms` (code `queue_full`).
    QueueFull { code: String, detail: String, retry_after_ms: Option<i64> },
    /// The operation is not available on this store (code `not_implemented`).
    NotImplemented { code: String, detail: String, retry_after_ms: Option<i64> },
}

impl ThrottleKitError {
    /// The stable code.
    pub fn code(&self) -> &str {
        match self {
            ThrottleKitError::ConfigInvalid { code, .. }
            | ThrottleKitError::StoreUnavailable { code, .. }
            | ThrottleKitError::RateLimitExceeded { code, .. }
            | ThrottleKitError::QueueFull { code, .. }
            | ThrottleKitError::NotImplemented { code, .. } => code,
        }
    }

    /// `config_invalid` for argument `arg`, worded as core words its own.
    pub fn config(arg: &str, problem: &str) -> Self {
        throttlekit::Error::config(arg, problem).into()
    }
}

impl From<throttlekit::Error> for ThrottleKitError {
    fn from(err: throttlekit::Error) -> Self {
        let code = err.code().as_str().to_owned();
        let detail = err.to_string();
        let retry_after_ms = err.retry_after_ms();
        match err.code() {
            ErrorCode::ConfigInvalid => ThrottleKitError::ConfigInvalid { code, detail, retry_after_ms },
            ErrorCode::StoreUnavailable => ThrottleKitError::StoreUnavailable { code, detail, retry_after_ms },
            ErrorCode::RateLimitExceeded => ThrottleKitError::RateLimitExceeded { code, detail, retry_after_ms },
            ErrorCode::QueueFull => ThrottleKitError::QueueFull { code, detail, retry_after_ms },
            ErrorCode::NotImplemented => ThrottleKitError::NotImplemented { code, detail, retry_after_ms },
        }
    }
}

impl fmt::Display for ThrottleKitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThrottleKitError::ConfigInvalid { detail, .. }
            | ThrottleKitError::StoreUnavailable { detail, .. }
            | ThrottleKitError::RateLimitExceeded { detail, .. }
            | ThrottleKitError::QueueFull { detail, .. }
            | ThrottleKitError::NotImplemented { detail, .. } => f.write_str(detail),
        }
    }
}

impl std::error::Error for ThrottleKitError {}

/// `Result` with [`ThrottleKitError`].
pub type Result<T> = std::result::Result<T, ThrottleKitError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_maps_to_the_case_of_the_same_code() {
        for code in ErrorCode::ALL {
            let e = ThrottleKitError::from(throttlekit::Error::new(code, "x"));
            assert_eq!(e.code(), code.as_str());
        }
    }
}
