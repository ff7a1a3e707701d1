//! What a middleware does with one request, decided once in core: forward it, forward it and
//! report the denial (shadow mode), deny it with a 429, or answer 503 because the store could
//! not decide.
//!
//! Every language's middleware used to hold this flow itself (the fail policy's three answers,
//! shadow mode, when the hook is told, which problem body goes with which status), so the same
//! request could be answered differently by two bindings. Here it is one pure function of the
//! check's result ([`super::HttpEdge::settle`]): a binding runs the check its own way (blocking,
//! on an event loop), hands the result over, and copies the [`Outcome`]'s status, header lines
//! and body into its framework's response. Only the parts that are the user's own code (the
//! `on_limited` hook, a replaced deny response) stay in the binding, called when
//! [`Action::limited`] says so.

use super::problem::{PROBLEM_CONTENT_TYPE, internal_error_body, quota_exceeded_body, unavailable_body};
use crate::decision::Decision;
use crate::error::ErrorCode;
use crate::multi::MultiDecision;

/// The middleware's answer to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Admitted (or admitted by the fail-open policy): call the handler and add the header
    /// lines to its response.
    Forward,
    /// Denied, but the edge is in shadow mode: tell the hook, then forward as [`Action::Forward`]
    /// (the lines a denial carries, `Retry-After` included, go on the handler's response).
    Shadow,
    /// Denied (by the limiter, or by the fail-closed policy): tell the hook, then answer 429
    /// with the header lines and the `quota-exceeded` problem body.
    Deny,
    /// The store did not answer and the fail policy is `Raise`: answer 503 with the
    /// `temporary-reduced-capacity` problem body and no rate-limit field.
    Unavailable,
}

impl Action {
    /// The response status the middleware sends itself: 429 ([`Action::Deny`]), 503
    /// ([`Action::Unavailable`]), or 0 when the request goes on to the handler.
    pub fn status(self) -> u16 {
        match self {
            Action::Forward | Action::Shadow => 0,
            Action::Deny => 429,
            Action::Unavailable => 503,
        }
    }

    /// Whether the request goes on to the handler.
    pub fn forwards(self) -> bool {
        matches!(self, Action::Forward | Action::Shadow)
    }

    /// Whether the request was denied, so the `on_limited` hook is told (in shadow mode too).
    pub fn limited(self) -> bool {
        matches!(self, Action::Shadow | Action::Deny)
    }

    /// The number a C or JNI caller receives: 0 forward, 1 shadow, 2 deny, 3 unavailable.
    pub fn code(self) -> u32 {
        match self {
            Action::Forward => 0,
            Action::Shadow => 1,
            Action::Deny => 2,
            Action::Unavailable => 3,
        }
    }

    /// The action numbered `code` ([`Action::code`]), `None` for any other number.
    pub fn from_code(code: u32) -> Option<Action> {
        [Action::Forward, Action::Shadow, Action::Deny, Action::Unavailable].into_iter().find(|a| a.code() == code)
    }

    /// The action of a request whose decision is `decision`, with shadow mode on or off.
    pub(super) fn of(decision: &Decision, shadow: bool) -> Action {
        match (decision.allowed, shadow) {
            (true, _) => Action::Forward,
            (false, true) => Action::Shadow,
            (false, false) => Action::Deny,
        }
    }
}

/// A decision the edge can answer: a single limiter's [`Decision`] or a multi limiter's
/// [`MultiDecision`], whose binding decision is the request's.
pub trait Decided {
    /// The decision the request got.
    fn request_decision(&self) -> &Decision;
}

impl Decided for Decision {
    fn request_decision(&self) -> &Decision {
        self
    }
}

impl Decided for MultiDecision {
    fn request_decision(&self) -> &Decision {
        &self.decision
    }
}

/// What [`super::HttpEdge`] decided for a request: the action, the decision it rests on, and
/// the instant of both (the header lines are rendered at that instant).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome<D = Decision> {
    /// What the middleware does.
    pub action: Action,
    /// The limiter's decision, or the fail policy's fallback (`fallback: true`); `None` for
    /// [`Action::Unavailable`], when nothing was decided.
    pub decision: Option<D>,
    /// The time the decision was made at, epoch ms.
    pub now_ms: i64,
}

impl<D: Decided> Outcome<D> {
    /// The status the middleware answers with itself ([`Action::status`]; 0 forwards).
    pub fn status(&self) -> u16 {
        self.action.status()
    }

    /// The request's decision (the binding one of a multi limiter), when there is one.
    pub fn request_decision(&self) -> Option<&Decision> {
        self.decision.as_ref().map(Decided::request_decision)
    }

    /// The body of the middleware's own answer: core's RFC 9457 `quota-exceeded` body for a
    /// denial (its `detail` names the same wait as `Retry-After`), the
    /// `temporary-reduced-capacity` one for an unavailable store, `None` when the request is
    /// forwarded. Made only when asked: a forwarded request builds no body.
    pub fn body(&self) -> Option<String> {
        match (self.action, self.request_decision()) {
            (Action::Deny, Some(d)) => Some(quota_exceeded_body(d)),
            (Action::Unavailable, _) => Some(unavailable_body()),
            _ => None,
        }
    }

    /// The body's `Content-Type` (`application/problem+json`), `None` without a body.
    pub fn content_type(&self) -> Option<&'static str> {
        (!self.action.forwards()).then_some(PROBLEM_CONTENT_TYPE)
    }
}

/// The answer to a request the edge could not decide because of an error: `code` is the
/// error's code (`config_invalid` for a key function's error or a peer that is not an IP
/// address, `internal` for an error that has none). An unavailable store is 503 with the
/// `temporary-reduced-capacity` body (what [`Action::Unavailable`] sends); anything else is the
/// server's misconfiguration, not the client's fault: 500 with a problem body naming the code
/// (`"detail":"rate limiter: config_invalid"`). The body's `Content-Type` is
/// [`PROBLEM_CONTENT_TYPE`].
pub fn error_response(code: &str) -> (u16, String) {
    if code == ErrorCode::StoreUnavailable.as_str() {
        return (503, unavailable_body());
    }
    (500, internal_error_body(code))
}
