//! The one error type of throttlekit, with stable string codes.
//!
//! Bindings map [`ErrorCode`] once to their native errors and expose `code` as a string, so a
//! caller can branch on `err.code == "config_invalid"` in every language. Codes are only ever
//! added, never renamed or reused: they are part of the wire contract with ThrottleKit 1.x.

use std::borrow::Cow;
use std::fmt;

/// A stable, machine-readable reason for an [`Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ErrorCode {
    /// A strategy option, a cost or another argument is out of its domain.
    ConfigInvalid = 1,
    /// The store could not answer (connection refused, timeout, script error).
    StoreUnavailable = 2,
    /// A caller asked to be refused with an error instead of a denied [`crate::Decision`].
    RateLimitExceeded = 3,
    /// The shaper's queue would exceed `max_queue_ms`.
    QueueFull = 4,
    /// The operation is not supported by this store or strategy.
    NotImplemented = 5,
}

impl ErrorCode {
    /// Every code, in the order of their numbers. A test checks it against the documented list.
    pub const ALL: [ErrorCode; 5] = [
        ErrorCode::ConfigInvalid,
        ErrorCode::StoreUnavailable,
        ErrorCode::RateLimitExceeded,
        ErrorCode::QueueFull,
        ErrorCode::NotImplemented,
    ];

    /// The stable string form, e.g. `"config_invalid"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ConfigInvalid => "config_invalid",
            ErrorCode::StoreUnavailable => "store_unavailable",
            ErrorCode::RateLimitExceeded => "rate_limit_exceeded",
            ErrorCode::QueueFull => "queue_full",
            ErrorCode::NotImplemented => "not_implemented",
        }
    }

    /// Parses the stable string form.
    pub fn parse(code: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A throttlekit failure: a stable [`ErrorCode`] plus a human-readable message.
///
/// A denied request is *not* an error: it is an ordinary [`crate::Decision`] with
/// `allowed == false`. Errors are for bad input and for stores that cannot answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: ErrorCode,
    message: Cow<'static, str>,
    retry_after_ms: Option<i64>,
}

impl Error {
    /// A new error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Error {
        Error { code, message: message.into(), retry_after_ms: None }
    }

    /// `config_invalid` for the named field, e.g. `Error::config("gcra.burst", "must be >= 1")`.
    pub fn config(field: &str, problem: &str) -> Error {
        Error::new(ErrorCode::ConfigInvalid, format!("{field} {problem}"))
    }

    /// `store_unavailable` carrying the underlying cause.
    pub fn store(cause: impl fmt::Display) -> Error {
        Error::new(ErrorCode::StoreUnavailable, format!("store unavailable: {cause}"))
    }

    /// `not_implemented` for `what`.
    pub fn not_implemented(what: &str) -> Error {
        Error::new(ErrorCode::NotImplemented, format!("{what} is not implemented"))
    }

    /// Attaches a retry hint (used by `queue_full` and `rate_limit_exceeded`).
    pub fn with_retry_after(mut self, ms: i64) -> Error {
        self.retry_after_ms = Some(ms);
        self
    }

    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The human-readable message (not stable; do not match on it).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// How long to wait before trying again, when the error knows.
    pub fn retry_after_ms(&self) -> Option<i64> {
        self.retry_after_ms
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

/// `Result` with throttlekit's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The text of a caught panic (`catch_unwind`'s payload: `panic!`'s `&str` or formatted
/// `String`), for the bindings' panic boundaries, which report it as their `internal`/`panic`
/// error instead of unwinding into the host.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown panic payload")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_payload_reads_as_its_text() {
        let text = |f: fn()| super::panic_message(&*std::panic::catch_unwind(f).unwrap_err()).to_string();
        assert_eq!(text(|| panic!("boom")), "boom");
        assert_eq!(text(|| panic!("{} {}", "formatted", 2)), "formatted 2");
        assert_eq!(text(|| std::panic::panic_any(7)), "unknown panic payload");
    }
}
