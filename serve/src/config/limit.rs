//! One configured limit: envoyproxy/ratelimit's `rate_limit` block (unit + requests_per_unit)
//! turned into a core [`Strategy`], plus our extensions (algorithm, burst, any period).
//!
//! Only configuration is converted here (a unit to milliseconds, a rate to a refill rate);
//! every decision is core's.

use throttlekit::{Strategy, StrategySpec};

use super::yaml::RawLimit;

/// envoyproxy/ratelimit's time units, numbered as the v3 proto numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// 1 s.
    Second,
    /// 60 s.
    Minute,
    /// 3600 s.
    Hour,
    /// 86 400 s.
    Day,
    /// 7 days.
    Week,
    /// 30 days, as envoyproxy/ratelimit counts a month.
    Month,
    /// 365 days, as envoyproxy/ratelimit counts a year.
    Year,
}

impl Unit {
    /// Every unit, shortest first.
    pub const ALL: [Unit; 7] = [Unit::Second, Unit::Minute, Unit::Hour, Unit::Day, Unit::Week, Unit::Month, Unit::Year];

    /// Parses a unit name, case-insensitively (`minute`, `MINUTE`).
    pub fn parse(s: &str) -> Option<Unit> {
        Some(match s.to_ascii_lowercase().as_str() {
            "second" => Unit::Second,
            "minute" => Unit::Minute,
            "hour" => Unit::Hour,
            "day" => Unit::Day,
            "week" => Unit::Week,
            "month" => Unit::Month,
            "year" => Unit::Year,
            _ => return None,
        })
    }

    /// The unit from its proto number (0, UNKNOWN, is `None`).
    pub fn from_proto(n: i32) -> Option<Unit> {
        Some(match n {
            1 => Unit::Second,
            2 => Unit::Minute,
            3 => Unit::Hour,
            4 => Unit::Day,
            7 => Unit::Week,
            5 => Unit::Month,
            6 => Unit::Year,
            _ => return None,
        })
    }

    /// The proto number (`RateLimitResponse.RateLimit.Unit`).
    pub fn proto(self) -> i32 {
        match self {
            Unit::Second => 1,
            Unit::Minute => 2,
            Unit::Hour => 3,
            Unit::Day => 4,
            Unit::Month => 5,
            Unit::Year => 6,
            Unit::Week => 7,
        }
    }

    /// The proto enum name (`MINUTE`), as protojson spells it.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Second => "SECOND",
            Unit::Minute => "MINUTE",
            Unit::Hour => "HOUR",
            Unit::Day => "DAY",
            Unit::Week => "WEEK",
            Unit::Month => "MONTH",
            Unit::Year => "YEAR",
        }
    }

    /// The unit's length in ms.
    pub fn ms(self) -> u64 {
        const DAY: u64 = 86_400_000;
        match self {
            Unit::Second => 1_000,
            Unit::Minute => 60_000,
            Unit::Hour => 3_600_000,
            Unit::Day => DAY,
            Unit::Week => 7 * DAY,
            Unit::Month => 30 * DAY,
            Unit::Year => 365 * DAY,
        }
    }
}

/// Parses a period: an integer and a suffix `ms`, `s`, `m`, `h`, `d` or `w` (`30s`, `5m`).
pub fn parse_period(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (n, suffix) = s.split_at(split);
    let n: u64 = n.parse().ok()?;
    let per = match suffix {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => return None,
    };
    n.checked_mul(per).filter(|ms| *ms > 0)
}

/// A limit ready to decide with.
#[derive(Clone, Debug)]
pub struct LimitDef {
    /// The configured name, if any (`replaces` targets, header policy names).
    pub name: Option<String>,
    /// Requests per unit (or per period), as configured and reported back to Envoy.
    pub requests_per_unit: u64,
    /// The unit when the period is exactly one (reported in `current_limit`).
    pub unit: Option<Unit>,
    /// The period in ms.
    pub period_ms: u64,
    /// Core's strategy. For `requests_per_unit: 0` a one-unit window that every hit overflows.
    pub strategy: Strategy,
    /// `requests_per_unit: 0`: refuses every request (envoyproxy/ratelimit's rule).
    pub blocks_all: bool,
    /// Distinguishes this limit's counter from the other limits of its descriptor: the
    /// algorithm and the period, so a config change to either starts a fresh counter instead
    /// of reading another algorithm's state.
    pub key_suffix: String,
}

impl LimitDef {
    /// Builds a limit from its YAML; `Err` is a message for the caller to place (file, path).
    pub fn from_raw(raw: &RawLimit) -> Result<LimitDef, String> {
        let rpu = raw.requests_per_unit.unwrap_or(0);
        let (unit, period_ms) = match (&raw.unit, &raw.period) {
            (Some(_), Some(_)) => return Err("give either `unit` or `period`, not both".into()),
            (Some(u), None) => {
                let unit = Unit::parse(u).ok_or_else(|| format!("invalid rate limit unit '{u}'"))?;
                (Some(unit), unit.ms())
            }
            (None, Some(p)) => {
                let ms = parse_period(p)
                    .ok_or_else(|| format!("invalid period '{p}' (an integer with ms, s, m, h, d or w: 30s, 5m)"))?;
                // A period of exactly one unit (`1d`) reports that unit to Envoy.
                (Unit::ALL.into_iter().find(|u| u.ms() == ms), ms)
            }
            (None, None) => return Err("a rate limit needs a `unit` (or `period`), or `unlimited: true`".into()),
        };
        if raw.requests_per_unit.is_none() {
            return Err("a rate limit needs `requests_per_unit`".into());
        }
        let algorithm = raw.algorithm.as_deref().unwrap_or("fixed_window");
        if raw.burst.is_some() && !matches!(algorithm, "gcra" | "token_bucket") {
            return Err(format!("`burst` applies to gcra and token_bucket, not {algorithm}"));
        }
        if raw.buckets.is_some() && algorithm != "sliding_window" {
            return Err(format!("`buckets` applies to sliding_window, not {algorithm}"));
        }
        if (raw.cadence.is_some() || raw.offset_minutes.is_some()) && algorithm != "quota" {
            return Err(format!("`cadence` and `offset_minutes` apply to quota, not {algorithm}"));
        }
        let blocks_all = rpu == 0;
        let strategy = if blocks_all {
            // Nothing is ever admitted; a one-unit window that every hit overflows (the cost
            // sent is at least 2) lets core report the window's reset like any other limit.
            Strategy::fixed_window(1, period_ms)
        } else {
            build_strategy(algorithm, rpu, period_ms, unit, raw)
        }
        .map_err(|e| e.message().to_string())?;
        Ok(LimitDef {
            name: raw.name.clone().filter(|n| !n.is_empty()),
            requests_per_unit: rpu,
            unit,
            period_ms,
            strategy,
            blocks_all,
            key_suffix: format!("{algorithm}:{period_ms}"),
        })
    }

    /// A limit sent by Envoy in the descriptor (`RateLimitDescriptor.limit`): a fixed window,
    /// as envoyproxy/ratelimit applies it.
    pub fn from_override(requests_per_unit: u32, unit: Unit) -> Result<LimitDef, String> {
        let rpu = u64::from(requests_per_unit);
        let blocks_all = rpu == 0;
        let strategy = Strategy::fixed_window(rpu.max(1), unit.ms()).map_err(|e| e.message().to_string())?;
        Ok(LimitDef {
            name: None,
            requests_per_unit: rpu,
            unit: Some(unit),
            period_ms: unit.ms(),
            strategy,
            blocks_all,
            key_suffix: format!("override:{}", unit.ms()),
        })
    }
}

fn build_strategy(
    algorithm: &str,
    rpu: u64,
    period_ms: u64,
    unit: Option<Unit>,
    raw: &RawLimit,
) -> throttlekit::Result<Strategy> {
    match algorithm {
        "fixed_window" => Strategy::fixed_window(rpu, period_ms),
        "gcra" => Strategy::gcra(rpu, period_ms, raw.burst),
        "token_bucket" => Strategy::token_bucket(raw.burst.unwrap_or(rpu), rpu as f64 * 1000.0 / period_ms as f64),
        "sliding_window" => Strategy::sliding_window(rpu, period_ms, raw.buckets),
        "sliding_window_log" => Strategy::sliding_window_log(rpu, period_ms),
        "quota" => {
            let cadence = match (&raw.cadence, unit) {
                (Some(c), _) => c.clone(),
                (None, Some(Unit::Day)) => "calendar-day".into(),
                (None, Some(Unit::Week)) => "calendar-week".into(),
                (None, Some(Unit::Month)) => "calendar-month".into(),
                _ => "fixed".into(),
            };
            let mut options = serde_json::json!({"limit": rpu, "resetCadence": cadence});
            if matches!(cadence.as_str(), "fixed" | "rolling") {
                options["periodMs"] = serde_json::json!(period_ms);
            }
            if let Some(off) = raw.offset_minutes {
                options["offsetMinutes"] = serde_json::json!(off);
            }
            let spec: StrategySpec = serde_json::from_value(serde_json::json!({"kind": "quota", "options": options}))
                .map_err(|e| throttlekit::Error::config("quota", &e.to_string()))?;
            spec.build()
        }
        other => Err(throttlekit::Error::config(
            "algorithm",
            &format!(
                "unknown algorithm '{other}' (fixed_window, gcra, token_bucket, sliding_window, sliding_window_log, quota)"
            ),
        )),
    }
}
