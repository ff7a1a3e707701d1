//! The rate-limit response fields, in four families, from decisions and policies.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::fields::{MAX_SF_INTEGER, push_sf_integer, sf_byte_sequence, write_sf_string};
use super::policy::Policy;
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::multi::{MultiDecision, MultiLimiter};
use crate::strategy::Strategy;

/// Which set of fields to send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Family {
    /// draft-ietf-httpapi-ratelimit-headers-06: `RateLimit-Limit`, `-Remaining`, `-Reset` (delta
    /// seconds to full replenishment) and `RateLimit-Policy`.
    #[serde(rename = "draft-6")]
    Draft6,
    /// -07: one `RateLimit` dictionary (`limit`, `remaining`, `reset`) and `RateLimit-Policy`.
    #[serde(rename = "draft-7")]
    Draft7,
    /// -08 to -11 (we cite -10): the lists `RateLimit-Policy: "name";q=;w=` and
    /// `RateLimit: "name";r=;t=`, with an optional `pk`.
    #[default]
    #[serde(rename = "draft-10")]
    Draft10,
    /// `X-RateLimit-Limit`, `-Remaining`, and `-Reset` in epoch seconds (GitHub's convention).
    #[serde(rename = "legacy")]
    Legacy,
}

impl Family {
    /// Parses `"draft-6"`, `"draft-7"`, `"draft-10"` or `"legacy"`; anything else is `config_invalid`.
    pub fn parse(s: &str) -> Result<Family> {
        match s {
            "draft-6" => Ok(Family::Draft6),
            "draft-7" => Ok(Family::Draft7),
            "draft-10" => Ok(Family::Draft10),
            "legacy" => Ok(Family::Legacy),
            _ => Err(Error::config("http.family", "must be one of draft-6, draft-7, draft-10, legacy")),
        }
    }
}

fn default_policy_name() -> String {
    "default".to_owned()
}

/// How to render the fields. The JSON form is camelCase:
/// `{"family": "draft-10", "policyName": "default", "partitionKeySecret": "..."}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeaderOptions {
    /// The field family (default `draft-10`).
    #[serde(default)]
    pub family: Family,
    /// The name of a limit that has none of its own (a single limiter's); default `"default"`.
    #[serde(default = "default_policy_name")]
    pub policy_name: String,
    /// When set, `draft-10` fields carry `pk`: HMAC-SHA256 of the limited key under this secret,
    /// so clients can tell partitions apart without learning the key (an IP, a user id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_key_secret: Option<String>,
}

impl Default for HeaderOptions {
    fn default() -> HeaderOptions {
        HeaderOptions { family: Family::Draft10, policy_name: default_policy_name(), partition_key_secret: None }
    }
}

impl HeaderOptions {
    /// Parses and validates the JSON form; errors are `config_invalid`.
    pub fn from_json(text: &str) -> Result<HeaderOptions> {
        let options: HeaderOptions = serde_json::from_str(text)
            .map_err(|e| Error::config("http.headerOptions", &format!("are invalid: {e}")))?;
        options.validate()?;
        Ok(options)
    }

    /// Checks the options: a non-empty policy name of at most 256 bytes, a non-empty secret.
    pub fn validate(&self) -> Result<()> {
        if self.policy_name.is_empty() || self.policy_name.len() > 256 {
            return Err(Error::config("http.policyName", "must be 1 to 256 bytes long"));
        }
        if self.partition_key_secret.as_deref() == Some("") {
            return Err(Error::config("http.partitionKeySecret", "must not be empty (omit it to send no pk)"));
        }
        Ok(())
    }
}

/// One limit that applied to a request: its decision and its policy. The first of a list is
/// the binding one (the one whose decision the request got).
#[derive(Clone, Debug, PartialEq)]
pub struct LimitStatus {
    /// The policy's name; `None` takes [`HeaderOptions::policy_name`].
    pub name: Option<String>,
    /// The limited key, used only to derive `pk` (never sent).
    pub key: Option<String>,
    /// The strategy's policy ([`Strategy::http_policy`]).
    pub policy: Policy,
    /// The decision for this limit.
    pub decision: Decision,
}

impl LimitStatus {
    /// A single limiter's status: unnamed (the options' policy name applies).
    pub fn single(strategy: &Strategy, decision: Decision, key: Option<&str>) -> LimitStatus {
        LimitStatus { name: None, key: key.map(str::to_owned), policy: strategy.http_policy(), decision }
    }

    /// A multi limiter's statuses, one per dimension named after it, the binding one first and
    /// the rest in declaration order. `keys` are the keys the check was given.
    pub fn multi(limiter: &MultiLimiter, decision: &MultiDecision, keys: &[&str]) -> Vec<LimitStatus> {
        let dims = limiter.dimensions();
        let binding = dims.iter().position(|d| d.name == decision.binding).unwrap_or(0);
        let key_of = |i: usize| keys.get(i).or_else(|| keys.first()).map(|k| (*k).to_owned());
        let status = |i: usize, d: Decision| LimitStatus {
            name: Some(dims[i].name.clone()),
            key: key_of(i),
            policy: dims[i].strategy.http_policy(),
            decision: d,
        };
        let mut out = Vec::with_capacity(dims.len());
        if let Some(&d) = decision.dimensions.get(binding) {
            // The binding dimension reports the request's outcome (an `any` limiter admits even
            // when this dimension alone would not have).
            out.push(status(
                binding,
                Decision {
                    allowed: decision.decision.allowed,
                    retry_after_ms: decision.decision.retry_after_ms,
                    fallback: decision.decision.fallback,
                    ..d
                },
            ));
        }
        for (i, &d) in decision.dimensions.iter().enumerate() {
            if i != binding && i < dims.len() {
                out.push(status(i, d));
            }
        }
        out
    }
}

/// `Retry-After` in delta seconds for a wait of `retry_after_ms`: `max(1, ceil(ms / 1000))`.
/// Never 0 (a client would retry at once), never milliseconds; clamped to 15 digits like
/// every other number we send.
pub fn retry_after_seconds(retry_after_ms: i64) -> i64 {
    seconds_up(retry_after_ms).clamp(1, MAX_SF_INTEGER)
}

/// Delta seconds until `decision` is fully replenished (its `reset_at`), rounded up: draft-6's
/// `RateLimit-Reset` and draft-7's `reset`. For an epoch-aligned fixed window of whole seconds
/// this is envoyproxy/ratelimit's `duration_until_reset` (`unit - now_s % unit`): never 0, since
/// the window ends after `now`. 0 for a limit already at full capacity (`reset_at <= now`).
pub fn reset_seconds(decision: &Decision, now_ms: i64) -> i64 {
    seconds_up(decision.reset_at.saturating_sub(now_ms))
}

pub(super) fn seconds_up(ms: i64) -> i64 {
    let ms = ms.max(0);
    ms / 1000 + i64::from(ms % 1000 != 0)
}

pub(super) fn partition_key(secret: &str, key: &str) -> Option<String> {
    // HMAC takes keys of any length, so this never fails; were it to, the field would go
    // without `pk` rather than panic.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(key.as_bytes());
    Some(sf_byte_sequence(&mac.finalize().into_bytes()))
}

/// Where [`write_lines`] puts the header lines, written in place: for each line it calls
/// `start(name)`, appends the value to the buffer that returns, then calls `end()`.
///
/// Why: a middleware sends two or three short lines per request, and building each value in a
/// `String` of its own (then copying it) cost more than the decision. A sink that writes
/// straight into the caller's reused buffer ([`HeaderBlock`], Node's joined string) makes a
/// render allocate nothing.
pub trait LineSink {
    /// Begins the line `name`; returns the buffer its value is appended to.
    fn start(&mut self, name: &'static str) -> &mut String;
    /// Ends the line begun by the last `start`.
    fn end(&mut self) {}
}

/// One `(name, value)` pair per line, pushed as the line starts (what [`rate_limit_headers`]
/// returns, for a response built after the lines).
impl LineSink for Vec<(&'static str, String)> {
    fn start(&mut self, name: &'static str) -> &mut String {
        let i = self.len();
        self.push((name, String::with_capacity(32)));
        &mut self[i].1
    }
}

/// A [`LineSink`] that appends `Name: value\n` per line to a buffer (the format of
/// [`super::HttpEdge::write_lines`], which the C ABI hands to Go's `tkhttp`).
pub struct HeaderBlock<'a>(pub &'a mut String);

impl LineSink for HeaderBlock<'_> {
    fn start(&mut self, name: &'static str) -> &mut String {
        self.0.push_str(name);
        self.0.push_str(": ");
        self.0
    }

    fn end(&mut self) {
        self.0.push('\n');
    }
}

/// The per-limit values every family draws from: numbers already clamped to sf-integers (so
/// they print exactly what [`super::sf_integer`] would), the name still unescaped.
struct Rendered<'a> {
    name: &'a str,
    quota: i64,
    window: Option<i64>,
    remaining: i64,
    /// Seconds until more quota (draft-10's `t`).
    next: i64,
    /// Delta seconds until full replenishment (draft-6/7 `reset`).
    reset_delta: i64,
    /// Epoch seconds of full replenishment (legacy).
    reset_epoch: i64,
    pk: Option<String>,
}

fn sf(v: i64) -> i64 {
    v.clamp(0, MAX_SF_INTEGER)
}

/// One limit's values: `name` is the policy name to send (the limit's own or the options').
fn render<'a>(
    name: &'a str,
    key: Option<&str>,
    policy: &Policy,
    d: &Decision,
    options: &HeaderOptions,
    now_ms: i64,
) -> Rendered<'a> {
    let mut next_s = seconds_up(policy.next_quota_ms(d, now_ms));
    if !d.allowed {
        // A denied limit's quota is back by its own Retry-After, so `t` may not point later
        // (draft -11 section 4: Retry-After not earlier than the end of the effective window).
        next_s = next_s.min(retry_after_seconds(d.retry_after_ms));
    }
    Rendered {
        name,
        quota: sf(policy.quota),
        window: policy.window_s.map(sf),
        remaining: sf(d.remaining),
        next: sf(next_s),
        reset_delta: sf(reset_seconds(d, now_ms)),
        reset_epoch: sf(seconds_up(d.reset_at)),
        pk: match (&options.partition_key_secret, key) {
            (Some(secret), Some(key)) => partition_key(secret, key),
            _ => None,
        },
    }
}

/// Draft-6/-7 policy list: `q;w=W` per limit (an integer item; no name in those revisions).
fn integer_policy_list(out: &mut String, limits: &[Rendered]) {
    for (i, l) in limits.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_sf_integer(out, l.quota);
        if let Some(w) = l.window {
            out.push_str(";w=");
            push_sf_integer(out, w);
        }
    }
}

/// `;pk=` and the partition key, when there is one.
fn push_pk(out: &mut String, pk: Option<&str>) {
    if let Some(pk) = pk {
        out.push_str(";pk=");
        out.push_str(pk);
    }
}

/// The family's rate-limit fields for `limits` (rendered, the binding one first).
fn write_fields(limits: &[Rendered], family: Family, sink: &mut (impl LineSink + ?Sized)) {
    let Some(b) = limits.first() else { return };
    match family {
        Family::Draft10 => {
            let v = sink.start("RateLimit-Policy");
            for (i, l) in limits.iter().enumerate() {
                if i > 0 {
                    v.push_str(", ");
                }
                write_sf_string(v, l.name);
                v.push_str(";q=");
                push_sf_integer(v, l.quota);
                if let Some(w) = l.window {
                    v.push_str(";w=");
                    push_sf_integer(v, w);
                }
                push_pk(v, l.pk.as_deref());
            }
            sink.end();
            let v = sink.start("RateLimit");
            for (i, l) in limits.iter().enumerate() {
                if i > 0 {
                    v.push_str(", ");
                }
                write_sf_string(v, l.name);
                v.push_str(";r=");
                push_sf_integer(v, l.remaining);
                v.push_str(";t=");
                push_sf_integer(v, l.next);
                push_pk(v, l.pk.as_deref());
            }
            sink.end();
        }
        Family::Draft7 => {
            integer_policy_list(sink.start("RateLimit-Policy"), limits);
            sink.end();
            let v = sink.start("RateLimit");
            v.push_str("limit=");
            push_sf_integer(v, b.quota);
            v.push_str(", remaining=");
            push_sf_integer(v, b.remaining);
            v.push_str(", reset=");
            push_sf_integer(v, b.reset_delta);
            sink.end();
        }
        Family::Draft6 => {
            integer_policy_list(sink.start("RateLimit-Policy"), limits);
            sink.end();
            for (name, n) in
                [("RateLimit-Limit", b.quota), ("RateLimit-Remaining", b.remaining), ("RateLimit-Reset", b.reset_delta)]
            {
                push_sf_integer(sink.start(name), n);
                sink.end();
            }
        }
        Family::Legacy => {
            for (name, n) in [
                ("X-RateLimit-Limit", b.quota),
                ("X-RateLimit-Remaining", b.remaining),
                ("X-RateLimit-Reset", b.reset_epoch),
            ] {
                push_sf_integer(sink.start(name), n);
                sink.end();
            }
        }
    }
}

/// `Retry-After` on a denial of the binding limit.
fn write_retry_after(binding: &Decision, sink: &mut (impl LineSink + ?Sized)) {
    if !binding.allowed {
        push_sf_integer(sink.start("Retry-After"), retry_after_seconds(binding.retry_after_ms));
        sink.end();
    }
}

/// The response header lines for the limits that applied to a request, the binding one first.
///
/// `Retry-After` (delta seconds, at least 1) comes last on every denial, whatever the family.
/// When the binding decision is a store-failure fallback nothing is known about the quota, so
/// no rate-limit field is sent (a denial still gets `Retry-After`). An empty `limits` or invalid
/// options are `config_invalid`.
pub fn rate_limit_headers(
    limits: &[LimitStatus],
    options: &HeaderOptions,
    now_ms: i64,
) -> Result<Vec<(&'static str, String)>> {
    let mut lines = Vec::with_capacity(4);
    write_lines(limits, options, now_ms, &mut lines)?;
    Ok(lines)
}

/// [`rate_limit_headers`] without a `Vec` or a `String` per line: `emit(name, value)` is called
/// for each line in order, the value borrowed from one buffer reused for every line.
pub fn for_each_line(
    limits: &[LimitStatus],
    options: &HeaderOptions,
    now_ms: i64,
    emit: impl FnMut(&'static str, &str),
) -> Result<()> {
    /// Each value built in `value`, then handed to `emit`.
    struct Each<F> {
        name: &'static str,
        value: String,
        emit: F,
    }
    impl<F: FnMut(&'static str, &str)> LineSink for Each<F> {
        fn start(&mut self, name: &'static str) -> &mut String {
            self.name = name;
            self.value.clear();
            &mut self.value
        }
        fn end(&mut self) {
            (self.emit)(self.name, &self.value);
        }
    }
    write_lines(limits, options, now_ms, &mut Each { name: "", value: String::with_capacity(64), emit })
}

/// [`rate_limit_headers`] written into `sink` (see [`LineSink`]): the same lines, in the same
/// order, byte for byte. Nothing is allocated for a single limit without `pk`; a multi limiter's
/// list allocates one `Vec`.
pub fn write_lines(
    limits: &[LimitStatus],
    options: &HeaderOptions,
    now_ms: i64,
    sink: &mut (impl LineSink + ?Sized),
) -> Result<()> {
    options.validate()?;
    let Some(binding) = limits.first() else {
        return Err(Error::config("http.limits", "must name at least one limit"));
    };
    if !binding.decision.fallback {
        fn status<'a>(l: &'a LimitStatus, options: &'a HeaderOptions, now_ms: i64) -> Rendered<'a> {
            let name = l.name.as_deref().unwrap_or(&options.policy_name);
            render(name, l.key.as_deref(), &l.policy, &l.decision, options, now_ms)
        }
        let one = |l| status(l, options, now_ms);
        if let [only] = limits {
            write_fields(&[one(only)], options.family, sink);
        } else {
            let rendered: Vec<Rendered> = limits.iter().map(one).collect();
            write_fields(&rendered, options.family, sink);
        }
    }
    write_retry_after(&binding.decision, sink);
    Ok(())
}

/// [`write_lines`] for a single limiter's `decision` (what `LimitStatus::single(strategy,
/// decision, key)` gives), without building the `LimitStatus` (its key's `String`): the
/// per-request path of every middleware on one limiter. `key` feeds `pk` only.
pub fn write_single_lines(
    strategy: &Strategy,
    decision: &Decision,
    key: Option<&str>,
    options: &HeaderOptions,
    now_ms: i64,
    sink: &mut (impl LineSink + ?Sized),
) -> Result<()> {
    options.validate()?;
    if !decision.fallback {
        let policy = strategy.http_policy();
        write_fields(&[render(&options.policy_name, key, &policy, decision, options, now_ms)], options.family, sink);
    }
    write_retry_after(decision, sink);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_whole_seconds_and_never_zero() {
        assert_eq!(retry_after_seconds(0), 1);
        assert_eq!(retry_after_seconds(-5), 1);
        assert_eq!(retry_after_seconds(1), 1);
        assert_eq!(retry_after_seconds(1000), 1);
        assert_eq!(retry_after_seconds(1001), 2);
        assert_eq!(retry_after_seconds(12_000), 12);
        assert_eq!(retry_after_seconds(i64::MAX), MAX_SF_INTEGER);
    }
}
