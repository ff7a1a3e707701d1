//! The HTTP edge: a middleware's options parsed once, then each request's client key, check,
//! outcome ([`Outcome`]: forward, shadow, deny 429, unavailable 503) and header lines from
//! plain bytes, with no JSON per request.
//!
//! The JSON entry points ([`super::json`]) take one string per call, which suits the vectors and
//! rare calls; a middleware that built and re-parsed JSON on every request spent most of its time
//! there (Go's `tkhttp` did: 23.7 µs a request against 2.7 µs for an `x/time/rate` middleware).
//! [`HttpEdge`] holds the validated options, and its per-request methods take borrowed text and
//! write the header lines into a caller's buffer or [`LineSink`]. The lines are exactly
//! [`super::rate_limit_headers`]'s, so every binding still sends the same bytes.

use super::client_ip::{ClientIdentity, ClientKeyOptions};
use super::headers::{HeaderBlock, HeaderOptions, LimitStatus, LineSink, write_lines, write_single_lines};
use super::outcome::{Action, Outcome};
use crate::decision::Decision;
use crate::error::{Error, ErrorCode, Result};
use crate::limiter::{FailPolicy, Limiter};
use crate::multi::{MultiDecision, MultiLimiter};

/// A middleware's validated options: how to render the fields, whom to believe about the
/// client's address, what a store failure means for the request, and whether denials are only
/// reported (shadow mode).
#[derive(Clone, Debug)]
pub struct HttpEdge {
    headers: HeaderOptions,
    identity: ClientIdentity,
    fail_policy: FailPolicy,
    shadow: bool,
}

impl HttpEdge {
    /// Validates the options once. `fail_policy` is the middleware's own: it applies when the
    /// limiter reports `store_unavailable` (a limiter whose own policy is fail-open or
    /// fail-closed never does). `Raise` answers 503 ([`Action::Unavailable`]). Shadow mode is
    /// off; [`HttpEdge::with_shadow`] turns it on.
    pub fn new(headers: HeaderOptions, client: &ClientKeyOptions, fail_policy: FailPolicy) -> Result<HttpEdge> {
        headers.validate()?;
        Ok(HttpEdge { headers, identity: ClientIdentity::new(client)?, fail_policy, shadow: false })
    }

    /// [`HttpEdge::new`] from the JSON forms of the two option objects (`""` for the defaults).
    pub fn from_json(headers: &str, client: &str, fail_policy: FailPolicy) -> Result<HttpEdge> {
        let headers =
            if headers.trim().is_empty() { HeaderOptions::default() } else { HeaderOptions::from_json(headers)? };
        let client =
            if client.trim().is_empty() { ClientKeyOptions::default() } else { ClientKeyOptions::from_json(client)? };
        HttpEdge::new(headers, &client, fail_policy)
    }

    /// Shadow mode: a denied request is still decided, given every field a denial carries
    /// (`Retry-After` included) and reported to the hook, but forwarded ([`Action::Shadow`]).
    pub fn with_shadow(mut self, shadow: bool) -> HttpEdge {
        self.shadow = shadow;
        self
    }

    /// The same edge with `headers` (validated: `config_invalid` when they are not).
    pub fn with_header_options(mut self, headers: HeaderOptions) -> Result<HttpEdge> {
        headers.validate()?;
        self.headers = headers;
        Ok(self)
    }

    /// The same edge with the client identity rules of `client` (`config_invalid` when invalid).
    pub fn with_client_key_options(mut self, client: &ClientKeyOptions) -> Result<HttpEdge> {
        self.identity = ClientIdentity::new(client)?;
        Ok(self)
    }

    /// The same edge with `policy` as its fail policy.
    pub fn with_fail_policy(mut self, policy: FailPolicy) -> HttpEdge {
        self.fail_policy = policy;
        self
    }

    /// The middleware's fail policy.
    pub fn fail_policy(&self) -> FailPolicy {
        self.fail_policy
    }

    /// Whether shadow mode is on.
    pub fn shadow(&self) -> bool {
        self.shadow
    }

    /// The header options the lines are rendered with.
    pub fn header_options(&self) -> &HeaderOptions {
        &self.headers
    }

    /// The client identity rules.
    pub fn identity(&self) -> &ClientIdentity {
        &self.identity
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

    /// The outcome of a single limiter's check whose result is `result`, decided at `now_ms`:
    /// the pure half of [`HttpEdge::check`], for a binding that ran the check itself (on its
    /// event loop, or awaited). A `store_unavailable` error becomes the fail policy's answer
    /// (`Raise`: [`Action::Unavailable`]; fail-open: forward with no fields; fail-closed: deny
    /// with `Retry-After: 1`); a denial becomes [`Action::Deny`], or [`Action::Shadow`] in
    /// shadow mode. Any other error is returned (the middleware answers 500:
    /// [`super::error_response`]).
    pub fn settle(&self, limiter: &Limiter, result: Result<Decision>, now_ms: i64) -> Result<Outcome> {
        let decision = match result {
            Ok(d) => d,
            Err(e) => match self.recover(e, |p, e| p.fallback(e, limiter.strategy().limit(), now_ms))? {
                Some(d) => d,
                None => return Ok(Outcome { action: Action::Unavailable, decision: None, now_ms }),
            },
        };
        Ok(Outcome { action: Action::of(&decision, self.shadow), decision: Some(decision), now_ms })
    }

    /// [`HttpEdge::settle`] for a multi limiter. The fail policy's fallback is the one core's
    /// multi limiter gives under that policy ([`MultiLimiter::fallback_with`]: each dimension's
    /// own, the first binding); it carries no rate-limit field.
    pub fn settle_multi(
        &self,
        limiter: &MultiLimiter,
        result: Result<MultiDecision>,
        now_ms: i64,
    ) -> Result<Outcome<MultiDecision>> {
        let decision = match result {
            Ok(d) => d,
            Err(e) => match self.recover(e, |p, e| limiter.fallback_with(p, e, now_ms))? {
                Some(d) => d,
                None => return Ok(Outcome { action: Action::Unavailable, decision: None, now_ms }),
            },
        };
        Ok(Outcome { action: Action::of(&decision.decision, self.shadow), decision: Some(decision), now_ms })
    }

    /// The fail policy's fallback for `err` (`fallback(policy, err)`): `Some` under fail-open or
    /// fail-closed, `None` under `Raise`; an error that is not `store_unavailable` is returned as
    /// it is.
    fn recover<D>(&self, err: Error, fallback: impl FnOnce(FailPolicy, Error) -> Result<D>) -> Result<Option<D>> {
        if err.code() != ErrorCode::StoreUnavailable {
            return Err(err);
        }
        match self.fail_policy {
            FailPolicy::Raise => Ok(None),
            policy => fallback(policy, err).map(Some),
        }
    }

    /// Checks `cost` for `key` at `now_ms`, blocking, and settles the result
    /// ([`HttpEdge::settle`]).
    pub fn check(&self, limiter: &Limiter, key: &str, cost: u64, now_ms: i64) -> Result<Outcome> {
        self.settle(limiter, limiter.check_sync_at(key, cost, now_ms), now_ms)
    }

    /// Checks `cost` for `keys` (one per dimension) on a multi limiter at `now_ms`, blocking,
    /// and settles the result ([`HttpEdge::settle_multi`]).
    pub fn check_multi(
        &self,
        limiter: &MultiLimiter,
        keys: &[&str],
        cost: u64,
        now_ms: i64,
    ) -> Result<Outcome<MultiDecision>> {
        self.settle_multi(limiter, limiter.check_sync_at(keys, cost, now_ms), now_ms)
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
        self.write_lines_to(limiter, key, decision, now_ms, &mut HeaderBlock(out))
    }

    /// [`HttpEdge::write_lines`] into any [`LineSink`] (a binding's own packing).
    pub fn write_lines_to(
        &self,
        limiter: &Limiter,
        key: &str,
        decision: &Decision,
        now_ms: i64,
        out: &mut impl LineSink,
    ) -> Result<()> {
        write_single_lines(limiter.strategy(), decision, Some(key), &self.headers, now_ms, out)
    }

    /// A multi limiter's header lines for `decision` into `out`: one list member per dimension,
    /// the binding one first ([`LimitStatus::multi`]); `keys` (one per dimension) feed `pk` only.
    pub fn write_multi_lines(
        &self,
        limiter: &MultiLimiter,
        keys: &[&str],
        decision: &MultiDecision,
        now_ms: i64,
        out: &mut impl LineSink,
    ) -> Result<()> {
        write_lines(&LimitStatus::multi(limiter, decision, keys), &self.headers, now_ms, out)
    }

    /// The header lines of `outcome` (nothing for [`Action::Unavailable`]).
    pub fn write_outcome_lines(
        &self,
        limiter: &Limiter,
        key: &str,
        outcome: &Outcome,
        out: &mut impl LineSink,
    ) -> Result<()> {
        match &outcome.decision {
            Some(d) => self.write_lines_to(limiter, key, d, outcome.now_ms, out),
            None => Ok(()),
        }
    }

    /// The header lines of a multi limiter's `outcome` (nothing for [`Action::Unavailable`]).
    pub fn write_multi_outcome_lines(
        &self,
        limiter: &MultiLimiter,
        keys: &[&str],
        outcome: &Outcome<MultiDecision>,
        out: &mut impl LineSink,
    ) -> Result<()> {
        match &outcome.decision {
            Some(d) => self.write_multi_lines(limiter, keys, d, outcome.now_ms, out),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "edge_tests.rs"]
mod flow_tests;

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
            edge.write_outcome_lines(&l, "k", &d, &mut HeaderBlock(&mut text)).unwrap();
            let spec = serde_json::to_string(l.strategy().spec()).unwrap();
            let dj = d.decision.unwrap();
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
