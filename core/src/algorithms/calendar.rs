//! Proleptic-Gregorian civil dates from day numbers and back (Howard Hinnant's algorithms),
//! integer-only so `core/lua/quota.lua` reproduces them exactly.
//!
//! Day 0 is 1970-01-01, a Thursday.

/// Milliseconds per day.
pub const DAY_MS: i64 = 86_400_000;

/// Days since 1970-01-01 of the civil date `y-m-d` (`m` in 1..=12, `d` in 1..=31).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `(y, m, d)` of day number `z`.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Day of the week of day number `z`: 0 = Sunday … 6 = Saturday.
pub fn weekday(z: i64) -> i64 {
    (z + 4).rem_euclid(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_zero_is_the_unix_epoch_on_a_thursday() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(weekday(0), 4);
    }

    #[test]
    fn civil_round_trips_over_550_years() {
        let start = days_from_civil(1750, 1, 1);
        let end = days_from_civil(2300, 12, 31);
        let mut prev = civil_from_days(start - 1);
        for z in start..=end {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
            // Consecutive days: the next date follows the previous one.
            assert!((y, m, d) > prev);
            prev = (y, m, d);
        }
    }

    #[test]
    fn leap_year_february_has_29_days_and_1900_does_not() {
        assert_eq!(days_from_civil(2024, 3, 1) - days_from_civil(2024, 2, 1), 29);
        assert_eq!(days_from_civil(2023, 3, 1) - days_from_civil(2023, 2, 1), 28);
        assert_eq!(days_from_civil(1900, 3, 1) - days_from_civil(1900, 2, 1), 28);
        assert_eq!(days_from_civil(2000, 3, 1) - days_from_civil(2000, 2, 1), 29);
    }

    #[test]
    fn agrees_with_known_dates() {
        // 2026-11-22 is a Sunday; 2000-01-01 is day 10957.
        assert_eq!(days_from_civil(2000, 1, 1), 10_957);
        assert_eq!(weekday(days_from_civil(2026, 11, 22)), 0);
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }
}
