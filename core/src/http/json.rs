//! The HTTP functions with JSON in and JSON out, for bindings that pass one string (the C ABI)
//! and for the header vectors, which store exactly these request objects.
//!
//! Headers: `{"options": HeaderOptions, "nowMs": 0, "limits": [{"name"?, "key"?, "strategy":
//! StrategySpec, "decision": Decision}]}` → `[["RateLimit-Policy", "..."], ...]`.
//!
//! Client key: `{"peer": "192.0.2.1", "headers": [["X-Forwarded-For", "..."]], "options":
//! ClientKeyOptions}` → `"203.0.113.7"`.

use serde::{Deserialize, Serialize};

use super::client_ip::{ClientIdentity, ClientKeyOptions};
use super::headers::{HeaderOptions, LimitStatus, rate_limit_headers};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::spec::StrategySpec;

/// One limit of a [`HeadersRequest`]: the strategy as a spec (its policy is computed in core).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitInput {
    /// The policy name; absent for a single limiter (the options' `policyName` applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The limited key, used only for `pk`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The limit's strategy.
    pub strategy: StrategySpec,
    /// Its decision.
    pub decision: DecisionInput,
}

/// A [`Decision`] as JSON numbers. Like strategy specs, the numbers are read as `f64` (what
/// JavaScript, cJSON and Lua carry: cJSON prints `9007199254740990.0` for a large integer) and
/// must then be whole and within `i64`; anything else is `config_invalid`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecisionInput {
    /// See [`Decision::allowed`].
    pub allowed: bool,
    /// See [`Decision::limit`].
    pub limit: f64,
    /// See [`Decision::remaining`].
    pub remaining: f64,
    /// See [`Decision::reset_at`].
    pub reset_at: f64,
    /// See [`Decision::retry_after_ms`].
    pub retry_after_ms: f64,
    /// See [`Decision::fallback`].
    #[serde(default)]
    pub fallback: bool,
}

fn whole(field: &str, v: f64) -> Result<i64> {
    // 2^63 is exactly representable; every f64 below it converts without saturating. NaN and
    // the infinities fail the range (and `fract`) test.
    if v.fract() == 0.0 && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v) {
        Ok(v as i64)
    } else {
        Err(Error::config(field, "must be a whole number within 64-bit range"))
    }
}

impl DecisionInput {
    /// The decision, or `config_invalid` naming the first number that is not a whole `i64`.
    pub fn to_decision(&self) -> Result<Decision> {
        Ok(Decision {
            allowed: self.allowed,
            limit: whole("decision.limit", self.limit)?,
            remaining: whole("decision.remaining", self.remaining)?,
            reset_at: whole("decision.resetAt", self.reset_at)?,
            retry_after_ms: whole("decision.retryAfterMs", self.retry_after_ms)?,
            fallback: self.fallback,
        })
    }
}

/// The input of [`headers_json`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeadersRequest {
    /// Rendering options (all optional).
    #[serde(default)]
    pub options: HeaderOptions,
    /// The instant of the decisions, epoch ms.
    pub now_ms: i64,
    /// The limits that applied, the binding one first.
    pub limits: Vec<LimitInput>,
}

/// The input of [`client_key_json`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientKeyRequest {
    /// The socket peer's address.
    pub peer: String,
    /// The request's headers as `[name, value]` pairs (only the forwarding header is read).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// Identity options (all optional).
    #[serde(default)]
    pub options: ClientKeyOptions,
}

impl HeadersRequest {
    /// Builds every strategy and renders the lines.
    pub fn render(&self) -> Result<Vec<(&'static str, String)>> {
        let limits = self
            .limits
            .iter()
            .map(|l| {
                Ok(LimitStatus {
                    name: l.name.clone(),
                    key: l.key.clone(),
                    policy: l.strategy.build()?.http_policy(),
                    decision: l.decision.to_decision()?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        rate_limit_headers(&limits, &self.options, self.now_ms)
    }
}

impl ClientKeyRequest {
    /// Validates the options and computes the key.
    pub fn key(&self) -> Result<String> {
        let identity = ClientIdentity::new(&self.options)?;
        let headers: Vec<(&str, &str)> = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        identity.key_for_peer(&self.peer, &headers)
    }
}

/// [`rate_limit_headers`] on a JSON [`HeadersRequest`]; returns a JSON array of `[name, value]`.
/// Malformed JSON, unknown fields and bad values are `config_invalid`.
pub fn headers_json(request: &str) -> Result<String> {
    let request: HeadersRequest = serde_json::from_str(request)
        .map_err(|e| Error::config("http.headersRequest", &format!("is not valid: {e}")))?;
    let lines = request.render()?;
    serde_json::to_string(&lines).map_err(|e| Error::config("http.headers", &format!("cannot be encoded: {e}")))
}

/// [`ClientIdentity::key_for_peer`] on a JSON [`ClientKeyRequest`]; returns the key itself (not
/// JSON). Malformed JSON, unknown fields and bad values are `config_invalid`.
pub fn client_key_json(request: &str) -> Result<String> {
    let request: ClientKeyRequest = serde_json::from_str(request)
        .map_err(|e| Error::config("http.clientKeyRequest", &format!("is not valid: {e}")))?;
    request.key()
}
