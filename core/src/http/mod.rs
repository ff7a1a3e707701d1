//! The HTTP edge: rate-limit response fields and client identity, as pure functions.
//!
//! Every binding's middleware calls these instead of formatting a header itself, so the same
//! decision gives byte-identical header lines in every language (`conformance-vectors/http/`
//! pins them). Nothing here does I/O or knows a framework: inputs and outputs are plain data,
//! and each entry point has a JSON form ([`json`]) for bindings that pass one string.
//!
//! - [`rate_limit_headers`]: decisions plus each strategy's [`Policy`] → `(name, value)` lines in
//!   one of four [`Family`]s (`draft-6`, `draft-7`, `draft-10`, `legacy`), with `Retry-After` on
//!   every denial.
//!   [`write_lines`] / [`write_single_lines`] write the same lines in place into a [`LineSink`]
//!   (a middleware's reused buffer), allocating nothing for a single limit.
//! - [`HttpEdge`]: a middleware's whole flow, its options validated once: the client key, the
//!   check, the fail policy and shadow mode settled into an [`Outcome`] (forward, shadow, deny
//!   429, unavailable 503) with its header lines and problem body, so a binding only copies them.
//! - [`quota_exceeded_body`]: the RFC 9457 `application/problem+json` body of a 429.
//! - [`ClientIdentity::key`]: the socket peer, or the rightmost untrusted hop of
//!   `X-Forwarded-For` / `Forwarded` when the peer is a trusted proxy; IPv6 grouped by prefix.
//!
//! `docs/http.md` explains the rules and cites the draft revision implemented.

mod client_ip;
mod edge;
mod fields;
mod headers;
pub mod json;
mod outcome;
mod policy;
mod problem;
#[cfg(test)]
mod reference;
pub mod vectors;

pub use client_ip::{ClientIdentity, ClientKeyOptions, ForwardedHeader};
pub use edge::HttpEdge;
pub use fields::{MAX_SF_INTEGER, sf_byte_sequence, sf_integer, sf_string};
pub use headers::{
    Family, HeaderBlock, HeaderOptions, LimitStatus, LineSink, for_each_line, rate_limit_headers, reset_seconds,
    retry_after_seconds, write_lines, write_single_lines,
};
pub use outcome::{Action, Decided, Outcome, error_response};
pub use policy::{Policy, Refill};
pub use problem::{
    PROBLEM_CONTENT_TYPE, QUOTA_EXCEEDED_TYPE, REDUCED_CAPACITY_TYPE, internal_error_body, quota_exceeded_body,
    unavailable_body,
};
