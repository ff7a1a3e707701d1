//! RFC 9457 problem details for the responses a limiter causes, built once here so every
//! language sends the same bytes.
//!
//! The types are the ones the RateLimit draft registers in IANA's "HTTP Problem Types"
//! registry: `quota-exceeded` (recommended status 429) and `temporary-reduced-capacity` (503).

use super::headers::retry_after_seconds;
use crate::decision::Decision;

/// The media type of a problem details body.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// `type` of a denial.
pub const QUOTA_EXCEEDED_TYPE: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/// `type` of a limiter that could not decide (store unavailable, fail policy `raise`).
pub const REDUCED_CAPACITY_TYPE: &str = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity";

/// The 429 body for a denied `decision`: `type`, `title`, `status`, and a `detail` that names
/// the same wait as `Retry-After`. The bodies are written as serde_json writes a `json!` object
/// (keys sorted, no spaces; the tests hold them to it) without its serializer, which the
/// WebAssembly module would carry for them alone.
pub fn quota_exceeded_body(decision: &Decision) -> String {
    let seconds = retry_after_seconds(decision.retry_after_ms);
    let unit = if seconds == 1 { "second" } else { "seconds" };
    format!(
        r#"{{"detail":"Rate limit exceeded; retry in {seconds} {unit}.","status":429,"title":"Too Many Requests","type":"{QUOTA_EXCEEDED_TYPE}"}}"#
    )
}

/// The 503 body when the limiter could not decide and its fail policy is `raise`.
pub fn unavailable_body() -> String {
    format!(
        r#"{{"detail":"The rate limiter could not reach its store.","status":503,"title":"Service Unavailable","type":"{REDUCED_CAPACITY_TYPE}"}}"#
    )
}

/// The 500 body when the middleware could not decide because of its own configuration (a key
/// function's error, a peer that is not an IP address): `code` is the error's code. The fields
/// are in the order the Rust tower layer has always sent them.
pub fn internal_error_body(code: &str) -> String {
    let mut detail = String::from("rate limiter: ");
    detail.push_str(code);
    format!(
        r#"{{"type":"about:blank","title":"Internal Server Error","status":500,"detail":{}}}"#,
        json_string(&detail)
    )
}

/// `s` as a JSON string, escaped as serde_json escapes it.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    crate::json_text::write_string(&mut out, s);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bodies_are_serde_jsons_bytes() {
        for retry_after_ms in [0, 1, 1000, 1001, 90_000] {
            let d = Decision { limit: 10, retry_after_ms, ..Decision::default() };
            let seconds = retry_after_seconds(retry_after_ms);
            let unit = if seconds == 1 { "second" } else { "seconds" };
            let want = json!({
                "type": QUOTA_EXCEEDED_TYPE,
                "title": "Too Many Requests",
                "status": 429,
                "detail": format!("Rate limit exceeded; retry in {seconds} {unit}."),
            });
            assert_eq!(quota_exceeded_body(&d), want.to_string());
        }
        let want = json!({
            "type": REDUCED_CAPACITY_TYPE,
            "title": "Service Unavailable",
            "status": 503,
            "detail": "The rate limiter could not reach its store.",
        });
        assert_eq!(unavailable_body(), want.to_string());
    }

    #[test]
    fn strings_escape_as_serde_json_does() {
        let mut all: String = (0u8..0x80).map(char::from).collect();
        all.push_str("é€😀\u{2028}");
        for s in [all.as_str(), "", "config_invalid", "a\"b\\c"] {
            assert_eq!(json_string(s), serde_json::Value::String(s.to_owned()).to_string());
        }
        let body = internal_error_body("config_invalid");
        assert_eq!(
            body,
            r#"{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"rate limiter: config_invalid"}"#
        );
    }
}
