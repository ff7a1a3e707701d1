//! Rates as people write them in configuration: `"10/second"`, `"10 per second"`, `"100/5m"`,
//! `"1 per 5 minutes"`, several joined by `;` (`"5/minute;100/day"`). The Flask, Django and Rack
//! integrations take limits in this shape (Flask-Limiter's and rack-attack's users write them
//! so); reading them here means every language accepts exactly the same strings, turns them into
//! the same strategy and refuses the same mistakes with the same words.
//!
//! A rate is a count per period, which a count-based strategy reads directly: GCRA (`count` per
//! `period`, a burst of `count`), the fixed window, the sliding window and its log (`count` per
//! window of `period`). Units are second, minute, hour and day (also `s`, `sec`, `m`, `min`,
//! `h`, `hr`, `d`, and plurals). Months and years are not fixed durations: a quota strategy says
//! what one means, so they are refused here with a pointer to it.

use crate::error::{Error, Result};
use crate::spec::{GcraOptions, SlidingWindowOptions, StrategySpec, WindowOptions};
use crate::strategy::Strategy;

/// One rate: `count` per `period_ms`, and the text it was read from (trimmed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rate {
    /// How many requests per period.
    pub count: u64,
    /// The period, in milliseconds.
    pub period_ms: u64,
    /// The rate as written (trimmed), e.g. to name a multi limiter's dimension.
    pub text: String,
}

/// The count-based strategies a rate can be read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateStrategy {
    /// GCRA: `count` per period with a burst of `count` (the default).
    Gcra,
    /// An epoch-aligned fixed window of the period.
    FixedWindow,
    /// The sub-bucketed sliding window of the period.
    SlidingWindow,
    /// The exact sliding-window log of the period.
    SlidingWindowLog,
}

impl RateStrategy {
    /// The names a configuration uses: `gcra`, `fixed-window`, `sliding-window`,
    /// `sliding-window-log`.
    pub const NAMES: [&'static str; 4] = ["gcra", "fixed-window", "sliding-window", "sliding-window-log"];

    /// The strategy named `name` (one of [`RateStrategy::NAMES`]); `config_invalid` otherwise.
    pub fn from_name(name: &str) -> Result<RateStrategy> {
        match name {
            "gcra" => Ok(RateStrategy::Gcra),
            "fixed-window" => Ok(RateStrategy::FixedWindow),
            "sliding-window" => Ok(RateStrategy::SlidingWindow),
            "sliding-window-log" => Ok(RateStrategy::SlidingWindowLog),
            _ => Err(Error::config(
                "strategy",
                &format!(
                    "unknown strategy {name:?} for a rate (one of {}; token bucket and quota take other options than a count per period)",
                    RateStrategy::NAMES.join(", ")
                ),
            )),
        }
    }
}

/// Milliseconds of a unit as written (plural `s` already removed), or `None`.
fn unit_ms(unit: &str) -> Option<u64> {
    Some(match unit {
        "second" | "s" | "sec" => 1_000,
        "minute" | "m" | "min" => 60_000,
        "hour" | "h" | "hr" => 3_600_000,
        "day" | "d" => 86_400_000,
        _ => return None,
    })
}

fn not_a_rate(text: &str) -> Error {
    Error::config(
        "rate",
        &format!(
            "{text:?} is not a rate such as \"10/second\", \"10 per second\" or \"1 per 5 minutes\" (second, minute, hour, day)"
        ),
    )
}

impl Rate {
    /// Reads one rate (`"10/second"`, `"10 per second"`, `"100/5m"`, `"1 per 5 minutes"`);
    /// `config_invalid` for anything else, a count or period of 0, or a month or year.
    pub fn parse(text: &str) -> Result<Rate> {
        let trimmed = text.trim();
        let lower = trimmed.to_ascii_lowercase();
        let (count, per) = match lower.split_once('/') {
            Some((c, p)) => (c.trim(), p.trim()),
            None => {
                let mut words = lower.splitn(3, char::is_whitespace);
                match (words.next(), words.next(), words.next()) {
                    (Some(c), Some("per"), Some(p)) => (c, p.trim()),
                    _ => return Err(not_a_rate(trimmed)),
                }
            }
        };
        let count: u64 = count.parse().map_err(|_| not_a_rate(trimmed))?;
        let digits = per.bytes().take_while(u8::is_ascii_digit).count();
        let periods: u64 = if digits == 0 { 1 } else { per[..digits].parse().map_err(|_| not_a_rate(trimmed))? };
        let unit = per[digits..].trim();
        if unit.starts_with("month") || unit.starts_with("year") {
            return Err(Error::config(
                "rate",
                &format!(
                    "{trimmed:?}: a month or a year is not a fixed duration; use a quota strategy (calendar-month)"
                ),
            ));
        }
        let unit_ms =
            unit_ms(unit).or_else(|| unit.strip_suffix('s').and_then(unit_ms)).ok_or_else(|| not_a_rate(trimmed))?;
        if count == 0 || periods == 0 {
            return Err(Error::config("rate", &format!("{trimmed:?}: the count and the period must be at least 1")));
        }
        let period_ms = periods.checked_mul(unit_ms).ok_or_else(|| not_a_rate(trimmed))?;
        Ok(Rate { count, period_ms, text: trimmed.to_owned() })
    }

    /// Reads several rates joined by `;` (empty items are skipped); `config_invalid` when there
    /// is none or one is not a rate.
    pub fn parse_list(text: &str) -> Result<Vec<Rate>> {
        let rates =
            text.split(';').filter(|item| !item.trim().is_empty()).map(Rate::parse).collect::<Result<Vec<_>>>()?;
        if rates.is_empty() {
            return Err(Error::config("rate", "an empty rate"));
        }
        Ok(rates)
    }

    /// The rate as `strategy`'s spec.
    pub fn spec(&self, strategy: RateStrategy) -> StrategySpec {
        let (limit, period) = (self.count as f64, self.period_ms as f64);
        match strategy {
            RateStrategy::Gcra => StrategySpec::Gcra(GcraOptions { limit, period_ms: period, burst: Some(limit) }),
            RateStrategy::FixedWindow => StrategySpec::FixedWindow(WindowOptions { limit, window_ms: period }),
            RateStrategy::SlidingWindow => {
                StrategySpec::SlidingWindow(SlidingWindowOptions { limit, window_ms: period, buckets: None })
            }
            RateStrategy::SlidingWindowLog => {
                StrategySpec::SlidingWindowLog(WindowOptions { limit, window_ms: period })
            }
        }
    }

    /// The rate as a validated `strategy` (core's limits on counts and periods apply).
    pub fn strategy(&self, strategy: RateStrategy) -> Result<Strategy> {
        Strategy::from_spec(&self.spec(strategy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_written_form_reads_the_same() {
        for (text, count, period_ms) in [
            ("10/second", 10, 1_000),
            ("10 per second", 10, 1_000),
            ("10/seconds", 10, 1_000),
            ("10/s", 10, 1_000),
            (" 10 / sec ", 10, 1_000),
            ("100/5m", 100, 300_000),
            ("100/5minutes", 100, 300_000),
            ("1 per 5 minutes", 1, 300_000),
            ("3 PER HOUR", 3, 3_600_000),
            ("7/2hr", 7, 7_200_000),
            ("200/day", 200, 86_400_000),
            ("5/d", 5, 86_400_000),
        ] {
            let r = Rate::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!((r.count, r.period_ms, r.text.as_str()), (count, period_ms, text.trim()), "{text}");
        }
    }

    #[test]
    fn mistakes_are_config_invalid_naming_the_rate() {
        for bad in [
            "",
            "10",
            "ten/second",
            "10/fortnight",
            "10 per",
            "10 each second",
            "0/second",
            "10/0s",
            "-1/second",
            "1.5/second",
            "10/month",
            "1 per year",
            "10/5",
            "99999999999999999999/s",
            "1/99999999999999999d",
        ] {
            let e = Rate::parse(bad).expect_err(bad);
            assert_eq!(e.code(), crate::ErrorCode::ConfigInvalid, "{bad}");
            assert!(e.to_string().contains("rate"), "{bad}: {e}");
        }
        assert!(Rate::parse("10/month").unwrap_err().to_string().contains("quota"));
    }

    #[test]
    fn lists_and_strategies() {
        let rates = Rate::parse_list("5/minute; 100/day;").unwrap();
        assert_eq!(rates.iter().map(|r| r.text.as_str()).collect::<Vec<_>>(), ["5/minute", "100/day"]);
        assert!(Rate::parse_list(" ; ").is_err());
        assert!(Rate::parse_list("5/minute;nope").is_err());
        let r = &rates[0];
        assert_eq!(r.strategy(RateStrategy::Gcra).unwrap(), Strategy::gcra(5, 60_000, Some(5)).unwrap());
        assert_eq!(r.strategy(RateStrategy::FixedWindow).unwrap(), Strategy::fixed_window(5, 60_000).unwrap());
        for name in RateStrategy::NAMES {
            let s = RateStrategy::from_name(name).unwrap();
            assert_eq!(r.strategy(s).unwrap().limit(), 5, "{name}");
        }
        assert_eq!(RateStrategy::from_name("token-bucket").unwrap_err().code(), crate::ErrorCode::ConfigInvalid);
    }
}
