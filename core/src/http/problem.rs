//! RFC 9457 problem details for the responses a limiter causes, built once here so every
//! language sends the same bytes.
//!
//! The types are the ones the RateLimit draft registers in IANA's "HTTP Problem Types"
//! registry: `quota-exceeded` (recommended status 429) and `temporary-reduced-capacity` (503).

use serde_json::json;

use super::headers::retry_after_seconds;
use crate::decision::Decision;

/// The media type of a problem details body.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// `type` of a denial.
pub const QUOTA_EXCEEDED_TYPE: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/// `type` of a limiter that could not decide (store unavailable, fail policy `raise`).
pub const REDUCED_CAPACITY_TYPE: &str = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity";

/// The 429 body for a denied `decision`: `type`, `title`, `status`, and a `detail` that names
/// the same wait as `Retry-After`.
pub fn quota_exceeded_body(decision: &Decision) -> String {
    let seconds = retry_after_seconds(decision.retry_after_ms);
    let unit = if seconds == 1 { "second" } else { "seconds" };
    json!({
        "type": QUOTA_EXCEEDED_TYPE,
        "title": "Too Many Requests",
        "status": 429,
        "detail": format!("Rate limit exceeded; retry in {seconds} {unit}."),
    })
    .to_string()
}

/// The 503 body when the limiter could not decide and its fail policy is `raise`.
pub fn unavailable_body() -> String {
    json!({
        "type": REDUCED_CAPACITY_TYPE,
        "title": "Service Unavailable",
        "status": 503,
        "detail": "The rate limiter could not reach its store.",
    })
    .to_string()
}

/// The 500 body when the middleware could not decide because of its own configuration (a key
/// function's error, a peer that is not an IP address): `code` is the error's code. The fields
/// are in the order the Rust tower layer has always sent them.
pub fn internal_error_body(code: &str) -> String {
    let detail = serde_json::Value::String(format!("rate limiter: {code}"));
    format!(r#"{{"type":"about:blank","title":"Internal Server Error","status":500,"detail":{detail}}}"#)
}
