//! The rate-limit response fields, in four families, from decisions and policies.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use std::fmt::Write as _;

use super::fields::{MAX_SF_INTEGER, sf_byte_sequence, write_sf_string};
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

fn seconds_up(ms: i64) -> i64 {
    let ms = ms.max(0);
    ms / 1000 + i64::from(ms % 1000 != 0)
}

fn partition_key(secret: &str, key: &str) -> Option<String> {
    // HMAC takes keys of any length, so this never fails; were it to, the field would go
    // without `pk` rather than panic.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).ok()?;
    mac.update(key.as_bytes());
    Some(sf_byte_sequence(&mac.finalize().into_bytes()))
}

/// The per-limit values every family draws from: numbers already clamped to sf-integers (so
/// `{}` prints exactly what [`super::sf_integer`] would), the name as an sf-string.
struct Rendered {
    name: String,
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

fn render(status: &LimitStatus, options: &HeaderOptions, now_ms: i64) -> Rendered {
    let d = &status.decision;
    let mut next_s = seconds_up(status.policy.next_quota_ms(d, now_ms));
    if !d.allowed {
        // A denied limit's quota is back by its own Retry-After, so `t` may not point later
        // (draft -11 section 4: Retry-After not earlier than the end of the effective window).
        next_s = next_s.min(retry_after_seconds(d.retry_after_ms));
    }
    let mut name = String::with_capacity(16);
    write_sf_string(&mut name, status.name.as_deref().unwrap_or(&options.policy_name));
    Rendered {
        name,
        quota: sf(status.policy.quota),
        window: status.policy.window_s.map(sf),
        remaining: sf(d.remaining),
        next: sf(next_s),
        reset_delta: sf(seconds_up(d.reset_at.saturating_sub(now_ms))),
        reset_epoch: sf(seconds_up(d.reset_at)),
        pk: match (&options.partition_key_secret, &status.key) {
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
        let _ = write!(out, "{}", l.quota);
        if let Some(w) = l.window {
            let _ = write!(out, ";w={w}");
        }
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
    for_each_line(limits, options, now_ms, |name, value| lines.push((name, value.to_owned())))?;
    Ok(lines)
}

/// [`rate_limit_headers`] without a `Vec` or a `String` per line: `emit(name, value)` is called
/// for each line in order, the value borrowed from one buffer reused for every line (the
/// per-request path of [`super::HttpEdge`] writes them straight into its output).
pub fn for_each_line(
    limits: &[LimitStatus],
    options: &HeaderOptions,
    now_ms: i64,
    mut emit: impl FnMut(&'static str, &str),
) -> Result<()> {
    options.validate()?;
    let Some(binding) = limits.first() else {
        return Err(Error::config("http.limits", "must name at least one limit"));
    };
    let mut v = String::with_capacity(64);
    if !binding.decision.fallback {
        let rendered: Vec<Rendered> = limits.iter().map(|l| render(l, options, now_ms)).collect();
        let b = &rendered[0];
        match options.family {
            Family::Draft10 => {
                for (i, l) in rendered.iter().enumerate() {
                    if i > 0 {
                        v.push_str(", ");
                    }
                    let _ = write!(v, "{};q={}", l.name, l.quota);
                    if let Some(w) = l.window {
                        let _ = write!(v, ";w={w}");
                    }
                    if let Some(pk) = &l.pk {
                        let _ = write!(v, ";pk={pk}");
                    }
                }
                emit("RateLimit-Policy", &v);
                v.clear();
                for (i, l) in rendered.iter().enumerate() {
                    if i > 0 {
                        v.push_str(", ");
                    }
                    let _ = write!(v, "{};r={};t={}", l.name, l.remaining, l.next);
                    if let Some(pk) = &l.pk {
                        let _ = write!(v, ";pk={pk}");
                    }
                }
                emit("RateLimit", &v);
            }
            Family::Draft7 => {
                integer_policy_list(&mut v, &rendered);
                emit("RateLimit-Policy", &v);
                v.clear();
                let _ = write!(v, "limit={}, remaining={}, reset={}", b.quota, b.remaining, b.reset_delta);
                emit("RateLimit", &v);
            }
            Family::Draft6 => {
                integer_policy_list(&mut v, &rendered);
                emit("RateLimit-Policy", &v);
                for (name, n) in [
                    ("RateLimit-Limit", b.quota),
                    ("RateLimit-Remaining", b.remaining),
                    ("RateLimit-Reset", b.reset_delta),
                ] {
                    v.clear();
                    let _ = write!(v, "{n}");
                    emit(name, &v);
                }
            }
            Family::Legacy => {
                for (name, n) in [
                    ("X-RateLimit-Limit", b.quota),
                    ("X-RateLimit-Remaining", b.remaining),
                    ("X-RateLimit-Reset", b.reset_epoch),
                ] {
                    v.clear();
                    let _ = write!(v, "{n}");
                    emit(name, &v);
                }
            }
        }
    }
    if !binding.decision.allowed {
        v.clear();
        let _ = write!(v, "{}", retry_after_seconds(binding.decision.retry_after_ms));
        emit("Retry-After", &v);
    }
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
