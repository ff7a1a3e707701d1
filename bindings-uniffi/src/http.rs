//! The HTTP edge for Ruby's Rack middleware (`ruby/lib/throttlekit/rack.rb`): core's
//! [`throttlekit::http::HttpEdge`] as a uniffi object. The edge decides a request's whole
//! outcome (forward, shadow, deny 429, unavailable 503) with its header lines and problem body,
//! so the middleware copies what it gets into a Rack response and computes nothing. The header
//! and client-key options arrive as JSON once, at construction; a request crosses no JSON.

use std::sync::Arc;

use throttlekit::http::{self as core_http, Action, Decided, LineSink, Outcome};

use crate::error::ThrottleKitError;
use crate::limiter::Limiter;
use crate::multi::MultiLimiter;
use crate::records::{Decision, MultiDecision};
use crate::store::FailPolicy;

type Result<T> = std::result::Result<T, ThrottleKitError>;

/// One response header line, exactly as core spells and renders it.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct HeaderLine {
    /// The field name (`RateLimit-Policy`, `RateLimit`, `Retry-After`, ...).
    pub name: String,
    /// The field value.
    pub value: String,
}

/// What the middleware does with a request ([`throttlekit::http::Outcome`]).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct HttpAnswer {
    /// `"forward"`, `"shadow"` (denied, forwarded anyway), `"deny"` or `"unavailable"`.
    pub action: String,
    /// The status the middleware answers with itself: 429, 503, or 0 to call the app.
    pub status: u16,
    /// The rate-limit fields to send, on the middleware's answer or the app's response.
    pub lines: Vec<HeaderLine>,
    /// The problem+json body of the middleware's own answer (`None` when forwarded).
    pub body: Option<String>,
    /// The body's content type (`application/problem+json`), `None` without a body.
    pub content_type: Option<String>,
    /// The request's decision (a multi limiter's binding one); `None` when unavailable.
    pub decision: Option<Decision>,
    /// A multi limiter's whole decision.
    pub multi: Option<MultiDecision>,
}

/// The status and problem body for a request the edge could not decide: 503 for
/// `store_unavailable`, else 500 naming the code (a key block that raised, ...).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ErrorAnswer {
    /// 503 or 500.
    pub status: u16,
    /// The problem+json body.
    pub body: String,
}

/// A middleware's validated options: the header family, whom to believe about the client's
/// address, its own fail policy and shadow mode.
#[derive(uniffi::Object)]
pub struct HttpEdge {
    inner: core_http::HttpEdge,
}

/// Collects core's lines as (name, value) pairs.
struct Lines(Vec<HeaderLine>);

impl LineSink for Lines {
    fn start(&mut self, name: &'static str) -> &mut String {
        self.0.push(HeaderLine { name: name.to_owned(), value: String::new() });
        &mut self.0.last_mut().expect("just pushed").value
    }
}

impl HttpAnswer {
    /// The answer for `outcome`, its header lines already rendered (`multi`: a multi
    /// limiter's whole decision).
    fn of<D: Decided>(outcome: &Outcome<D>, lines: Lines, multi: Option<MultiDecision>) -> HttpAnswer {
        HttpAnswer {
            action: action_name(outcome.action).to_owned(),
            status: outcome.status(),
            lines: lines.0,
            body: outcome.body(),
            content_type: outcome.content_type().map(str::to_owned),
            decision: outcome.request_decision().copied().map(Into::into),
            multi,
        }
    }
}

fn action_name(a: Action) -> &'static str {
    match a {
        Action::Forward => "forward",
        Action::Shadow => "shadow",
        Action::Deny => "deny",
        Action::Unavailable => "unavailable",
    }
}

#[uniffi::export]
impl HttpEdge {
    /// Validates the options once: `header_options_json` and `client_key_options_json` are the
    /// JSON objects every binding takes (`""` for the defaults; docs/http.md, "Options as
    /// data"); `fail_policy` is the middleware's own (`Raise`: 503). Bad options are
    /// `config_invalid` naming the field.
    #[uniffi::constructor(default(header_options_json = "", client_key_options_json = "", fail_policy = None, shadow = false))]
    pub fn new(
        header_options_json: String,
        client_key_options_json: String,
        fail_policy: Option<FailPolicy>,
        shadow: bool,
    ) -> Result<Arc<Self>> {
        let policy = fail_policy.map_or(throttlekit::FailPolicy::Raise, Into::into);
        let inner =
            core_http::HttpEdge::from_json(&header_options_json, &client_key_options_json, policy)?.with_shadow(shadow);
        Ok(Arc::new(HttpEdge { inner }))
    }

    /// The client key of a request: its peer address (Rack's `REMOTE_ADDR`) and its two
    /// forwarding headers' lines (`""` when absent), read under the trusted-proxy rules.
    pub fn client_key(&self, peer: String, x_forwarded_for: String, forwarded: String) -> Result<String> {
        Ok(self.inner.client_key(&peer, &x_forwarded_for, &forwarded)?)
    }

    /// Checks `cost` for `key` at the limiter's clock and settles the whole outcome; blocks
    /// the calling thread for a Redis round trip (the GVL is released meanwhile).
    #[uniffi::method(default(cost = 1))]
    pub fn check_blocking(&self, limiter: Arc<Limiter>, key: String, cost: i64) -> Result<HttpAnswer> {
        let core = limiter.core();
        let cost = crate::convert::cost(cost)?;
        let now = core.clock().now_ms();
        let outcome = self.inner.check(core, &key, cost, now)?;
        let mut lines = Lines(Vec::new());
        self.inner.write_outcome_lines(core, &key, &outcome, &mut lines)?;
        Ok(HttpAnswer::of(&outcome, lines, None))
    }

    /// [`HttpEdge::check_blocking`] for a multi limiter: `keys` holds one key per dimension.
    #[uniffi::method(default(cost = 1))]
    pub fn check_multi_blocking(&self, limiter: Arc<MultiLimiter>, keys: Vec<String>, cost: i64) -> Result<HttpAnswer> {
        let core = limiter.core();
        let cost = crate::convert::cost(cost)?;
        let keys = crate::convert::refs(&keys);
        let now = core.clock().now_ms();
        let outcome = self.inner.check_multi(core, &keys, cost, now)?;
        let mut lines = Lines(Vec::new());
        self.inner.write_multi_outcome_lines(core, &keys, &outcome, &mut lines)?;
        let multi = outcome.decision.clone().map(Into::into);
        Ok(HttpAnswer::of(&outcome, lines, multi))
    }

    /// The answer to a request that could not be decided because of an error of code `code`.
    pub fn error_answer(&self, code: String) -> ErrorAnswer {
        let (status, body) = core_http::error_response(&code);
        ErrorAnswer { status, body }
    }
}
