//! The HTTP edge with no JSON per request: options parsed once, then each request's client key,
//! check, fail policy and header lines from plain bytes.
//!
//! The JSON entry points ([`super::json`]) take one string per call, which suits the vectors and
//! rare calls; a middleware that built and re-parsed JSON on every request spent most of its time
//! there (Go's `tkhttp` did: 23.7 µs a request against 2.7 µs for an `x/time/rate` middleware).
//! [`HttpEdge`] holds the validated options, and its per-request methods take borrowed text and
//! write the header lines into a caller's buffer as `Name: value\n`, which a binding splits on
//! the first `": "` of each line. The lines are exactly [`super::rate_limit_headers`]'s, so every
//! binding still sends the same bytes.

use super::client_ip::{ClientIdentity, ClientKeyOptions};
use super::headers::{HeaderBlock, HeaderOptions, write_single_lines};
use crate::decision::Decision;
use crate::error::{Error, ErrorCode, Result};
use crate::limiter::{FailPolicy, Limiter};
use crate::multi::MultiLimiter;

/// A middleware's validated options: how to render the fields, whom to believe about the
/// client's address, and what a store failure means for the request.
#[derive(Clone, Debug)]
pub struct HttpEdge {
    headers: HeaderOptions,
    identity: ClientIdentity,
    fail_policy: FailPolicy,
}

/// What [`HttpEdge::check`] decided for a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EdgeDecision {
    /// The decision: the limiter's, or the middleware fail policy's fallback (`fallback: true`).
    pub decision: Decision,
    /// The time the decision and its header lines were computed at (epoch ms).
    pub now_ms: i64,
}

impl HttpEdge {
    /// Validates the options once. `fail_policy` is the middleware's own: it applies when the
    /// limiter reports `store_unavailable` (a limiter whose own policy is fail-open or
    /// fail-closed never does). `Raise` leaves the error to the caller, who answers 503.
    pub fn new(headers: HeaderOptions, client: &ClientKeyOptions, fail_policy: FailPolicy) -> Result<HttpEdge> {
        headers.validate()?;
        Ok(HttpEdge { headers, identity: ClientIdentity::new(client)?, fail_policy })
    }

    /// [`HttpEdge::new`] from the JSON forms of the two option objects (`""` for the defaults).
    pub fn from_json(headers: &str, client: &str, fail_policy: FailPolicy) -> Result<HttpEdge> {
        let headers =
            if headers.trim().is_empty() { HeaderOptions::default() } else { HeaderOptions::from_json(headers)? };
        let client =
            if client.trim().is_empty() { ClientKeyOptions::default() } else { ClientKeyOptions::from_json(client)? };
        HttpEdge::new(headers, &client, fail_policy)
    }

    /// The middleware's fail policy.
    pub fn fail_policy(&self) -> FailPolicy {
        self.fail_policy
    }

    /// The client key of a request from its peer address and the field lines of its two
    /// forwarding headers, each header's repeated lines joined with `\n` (`""` when absent).
    /// Only the configured header is read ([`ClientIdentity::key`]). A peer that is not an IP
    /// address is `config_invalid`.
    pub fn client_key(&self, peer: &str, x_forwarded_for: &str, forwarded: &str) -> Result<String> {
        let mut key = String::new();
        self.write_client_key(peer, x_forwarded_for, forwarded, &mut key)?;
        Ok(key)
    }

    /// [`HttpEdge::client_key`] appended to `out`: nothing is allocated when `out` has room
    /// and neither forwarding header is present (the common request).
    pub fn write_client_key(&self, peer: &str, x_forwarded_for: &str, forwarded: &str, out: &mut String) -> Result<()> {
        let mut fields: Vec<(&str, &str)> = Vec::new();
        if !x_forwarded_for.is_empty() {
            fields.extend(x_forwarded_for.split('\n').map(|v| ("x-forwarded-for", v)));
        }
        if !forwarded.is_empty() {
            fields.extend(forwarded.split('\n').map(|v| ("forwarded", v)));
        }
        self.identity.write_key_for_peer(peer, &fields, out)
    }

    /// Checks `cost` for `key` at `now_ms`; a `store_unavailable` error becomes the fail
    /// policy's fallback decision, or stays an error under `Raise`.
    pub fn check(&self, limiter: &Limiter, key: &str, cost: u64, now_ms: i64) -> Result<EdgeDecision> {
        let decision = match limiter.check_sync_at(key, cost, now_ms) {
            Ok(d) => d,
            Err(e) if e.code() == ErrorCode::StoreUnavailable => {
                self.fail_policy.fallback(e, limiter.strategy().limit(), now_ms)?
            }
            Err(e) => return Err(e),
        };
        Ok(EdgeDecision { decision, now_ms })
    }

    /// The fail policy's decision for a multi limiter whose store is unavailable (the first
    /// dimension's limit, as core's multi limiter falls back); `Raise` is `store_unavailable`.
    pub fn multi_fallback(&self, limiter: &MultiLimiter, now_ms: i64) -> Result<Decision> {
        let limit = limiter.dimensions().first().map_or(0, |d| d.strategy.limit());
        self.fail_policy.fallback(Error::store("the multi limiter's store did not answer"), limit, now_ms)
    }

    /// Appends a single limiter's header lines for `decision` to `out`, one `Name: value\n`
    /// per line, in [`super::rate_limit_headers`]'s order. `key` feeds `pk` only.
    pub fn write_lines(
        &self,
        limiter: &Limiter,
        key: &str,
        decision: &Decision,
        now_ms: i64,
        out: &mut String,
    ) -> Result<()> {
        write_single_lines(limiter.strategy(), decision, Some(key), &self.headers, now_ms, &mut HeaderBlock(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::json::headers_json;
    use crate::{Limiter, Strategy};

    fn limiter() -> Limiter {
        Limiter::builder(Strategy::gcra(5, 60_000, None).unwrap()).build()
    }

    #[test]
    fn lines_match_the_json_entry_point() {
        let edge = HttpEdge::from_json(r#"{"partitionKeySecret":"s"}"#, "", FailPolicy::Raise).unwrap();
        let l = limiter();
        for now in [1_000, 1_500, 2_000, 2_001, 2_002, 2_003, 2_004] {
            let d = edge.check(&l, "k", 1, now).unwrap();
            let mut text = String::new();
            edge.write_lines(&l, "k", &d.decision, now, &mut text).unwrap();
            let spec = serde_json::to_string(l.strategy().spec()).unwrap();
            let dj = &d.decision;
            let json = headers_json(&format!(
                r#"{{"options":{{"partitionKeySecret":"s"}},"nowMs":{now},"limits":[{{"key":"k","strategy":{spec},
                "decision":{{"allowed":{},"limit":{},"remaining":{},"resetAt":{},"retryAfterMs":{}}}}}]}}"#,
                dj.allowed, dj.limit, dj.remaining, dj.reset_at, dj.retry_after_ms
            ))
            .unwrap();
            let pairs: Vec<(String, String)> = serde_json::from_str(&json).unwrap();
            let expected: String = pairs.iter().map(|(n, v)| format!("{n}: {v}\n")).collect();
            assert_eq!(text, expected, "at {now}");
        }
    }

    #[test]
    fn client_key_reads_only_the_configured_header_and_joins_lines() {
        let edge = HttpEdge::from_json("", r#"{"trustedProxies":["10.0.0.0/8"]}"#, FailPolicy::Raise).unwrap();
        assert_eq!(
            edge.client_key("10.0.0.1:5000", "203.0.113.9\n10.1.1.1", "for=198.51.100.1").unwrap(),
            "203.0.113.9"
        );
        assert_eq!(edge.client_key("192.0.2.7:1", "203.0.113.9", "").unwrap(), "192.0.2.7");
        assert_eq!(edge.client_key("10.0.0.1", "", "for=198.51.100.1").unwrap(), "10.0.0.1");
        assert_eq!(edge.client_key("nope", "", "").unwrap_err().code(), ErrorCode::ConfigInvalid);
        let fwd = HttpEdge::from_json(
            "",
            r#"{"trustedProxies":["10.0.0.0/8"],"forwardedHeader":"forwarded"}"#,
            FailPolicy::Raise,
        )
        .unwrap();
        assert_eq!(fwd.client_key("10.0.0.1", "203.0.113.9", "for=198.51.100.1").unwrap(), "198.51.100.1");
    }

    #[test]
    fn bad_options_are_config_invalid() {
        assert!(HttpEdge::from_json(r#"{"family":"draft-99"}"#, "", FailPolicy::Raise).is_err());
        assert!(HttpEdge::from_json(r#"{"policyName":""}"#, "", FailPolicy::Raise).is_err());
        assert!(HttpEdge::from_json("", r#"{"ipv6Prefix":0}"#, FailPolicy::Raise).is_err());
    }
}
