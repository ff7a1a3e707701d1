//! The YAML as written: envoyproxy/ratelimit's schema plus our extensions, parsed strictly.
//!
//! Every struct denies unknown fields, as envoyproxy/ratelimit's loader does (its key
//! whitelist), so a typo is a load error naming the file and the path instead of a limit that
//! silently never applies. serde_yaml puts the path (`descriptors[0].rate_limit`) in its message.

use serde::Deserialize;

/// One config file: a domain and its descriptor tree.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFile {
    /// The domain Envoy sends in `RateLimitRequest.domain`.
    #[serde(default)]
    pub domain: String,
    /// The top-level descriptors.
    #[serde(default)]
    pub descriptors: Vec<RawDescriptor>,
}

/// One node of the descriptor tree.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDescriptor {
    /// The entry key to match.
    #[serde(default)]
    pub key: String,
    /// The entry value to match (`*` is a wildcard anywhere); absent matches any value.
    #[serde(default)]
    pub value: Option<String>,
    /// envoyproxy/ratelimit's single limit.
    #[serde(default)]
    pub rate_limit: Option<RawLimit>,
    /// Ours: several limits on one descriptor, all of which must admit (burst plus sustained).
    #[serde(default)]
    pub rate_limits: Option<Vec<RawLimit>>,
    /// Children, matched against the request's next entry.
    #[serde(default)]
    pub descriptors: Vec<RawDescriptor>,
    /// Decide and report, but never refuse.
    #[serde(default)]
    pub shadow_mode: bool,
    /// envoyproxy/ratelimit: per-value metrics. Accepted; our metrics are per limit.
    #[serde(default)]
    pub detailed_metric: bool,
    /// envoyproxy/ratelimit: the value in the metric name. Accepted; our metrics are per limit.
    #[serde(default)]
    pub value_to_metric: bool,
    /// Every value a wildcard matches shares one counter (the pattern's), instead of one each.
    #[serde(default)]
    pub share_threshold: bool,
    /// envoyproxy/ratelimit's quota mode flag. Accepted; see docs/serve.md.
    #[serde(default)]
    pub quota_mode: bool,
    /// Free-form metadata, carried and ignored.
    #[serde(default)]
    pub metadata: Option<serde_yaml::Value>,
}

/// A limit: envoyproxy/ratelimit's fields plus ours.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimit {
    /// `second`, `minute`, `hour`, `day`, `week`, `month` (30 days), `year` (365 days).
    #[serde(default)]
    pub unit: Option<String>,
    /// Requests per unit (or per `period`); 0 refuses every request.
    #[serde(default)]
    pub requests_per_unit: Option<u64>,
    /// No limit at all (no unit allowed).
    #[serde(default)]
    pub unlimited: bool,
    /// The limit's name (what `replaces` refers to, and the policy name in the headers).
    #[serde(default)]
    pub name: Option<String>,
    /// Names of limits this one replaces when both apply to one request.
    #[serde(default)]
    pub replaces: Vec<RawReplaces>,
    /// Ours: `fixed_window` (the default), `gcra`, `token_bucket`, `sliding_window`,
    /// `sliding_window_log`, `quota`.
    #[serde(default)]
    pub algorithm: Option<String>,
    /// Ours: any period (`30s`, `5m`, `250ms`, `2h`, `1d`) instead of `unit`.
    #[serde(default)]
    pub period: Option<String>,
    /// Ours: GCRA burst / token-bucket capacity (default: requests_per_unit).
    #[serde(default)]
    pub burst: Option<u64>,
    /// Ours: sliding-window sub-buckets (default 10).
    #[serde(default)]
    pub buckets: Option<u64>,
    /// Ours: quota cadence (`calendar-day`, `calendar-week`, `calendar-month`, `fixed`).
    #[serde(default)]
    pub cadence: Option<String>,
    /// Ours: quota calendar offset from UTC in minutes.
    #[serde(default)]
    pub offset_minutes: Option<i64>,
}

/// One `replaces` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReplaces {
    /// The replaced limit's name.
    #[serde(default)]
    pub name: String,
}
