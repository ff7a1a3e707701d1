//! The rendering of the rate-limit fields as it was before the allocation-free writer
//! (`format!` per value, a `String` per name and line), kept as a test oracle: random limits,
//! decisions, options and families must give byte-identical lines through every entry point
//! (`rate_limit_headers`, `for_each_line`, `write_lines`, `write_single_lines`, `HttpEdge`).

use std::fmt::Write as _;

use proptest::prelude::*;
use proptest::strategy::Strategy as Gen;

use super::fields::{MAX_SF_INTEGER, sf_string};
use super::headers::{
    Family, HeaderBlock, HeaderOptions, LimitStatus, for_each_line, partition_key, rate_limit_headers,
    retry_after_seconds, seconds_up, write_lines, write_single_lines,
};
use crate::{Decision, Strategy};

struct Old {
    name: String,
    quota: i64,
    window: Option<i64>,
    remaining: i64,
    next: i64,
    reset_delta: i64,
    reset_epoch: i64,
    pk: Option<String>,
}

fn sf(v: i64) -> i64 {
    v.clamp(0, MAX_SF_INTEGER)
}

fn old_render(status: &LimitStatus, options: &HeaderOptions, now_ms: i64) -> Old {
    let d = &status.decision;
    let mut next_s = seconds_up(status.policy.next_quota_ms(d, now_ms));
    if !d.allowed {
        next_s = next_s.min(retry_after_seconds(d.retry_after_ms));
    }
    Old {
        name: sf_string(status.name.as_deref().unwrap_or(&options.policy_name)),
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

fn old_policy_list(limits: &[Old]) -> String {
    let mut out = String::new();
    for (i, l) in limits.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}", l.quota);
        if let Some(w) = l.window {
            let _ = write!(out, ";w={w}");
        }
    }
    out
}

fn old_lines(limits: &[LimitStatus], options: &HeaderOptions, now_ms: i64) -> Vec<(&'static str, String)> {
    let binding = &limits[0];
    let mut lines = Vec::new();
    if !binding.decision.fallback {
        let r: Vec<Old> = limits.iter().map(|l| old_render(l, options, now_ms)).collect();
        let b = &r[0];
        match options.family {
            Family::Draft10 => {
                let mut v = String::new();
                for (i, l) in r.iter().enumerate() {
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
                lines.push(("RateLimit-Policy", v));
                let mut v = String::new();
                for (i, l) in r.iter().enumerate() {
                    if i > 0 {
                        v.push_str(", ");
                    }
                    let _ = write!(v, "{};r={};t={}", l.name, l.remaining, l.next);
                    if let Some(pk) = &l.pk {
                        let _ = write!(v, ";pk={pk}");
                    }
                }
                lines.push(("RateLimit", v));
            }
            Family::Draft7 => {
                lines.push(("RateLimit-Policy", old_policy_list(&r)));
                lines.push((
                    "RateLimit",
                    format!("limit={}, remaining={}, reset={}", b.quota, b.remaining, b.reset_delta),
                ));
            }
            Family::Draft6 => {
                lines.push(("RateLimit-Policy", old_policy_list(&r)));
                lines.push(("RateLimit-Limit", b.quota.to_string()));
                lines.push(("RateLimit-Remaining", b.remaining.to_string()));
                lines.push(("RateLimit-Reset", b.reset_delta.to_string()));
            }
            Family::Legacy => {
                lines.push(("X-RateLimit-Limit", b.quota.to_string()));
                lines.push(("X-RateLimit-Remaining", b.remaining.to_string()));
                lines.push(("X-RateLimit-Reset", b.reset_epoch.to_string()));
            }
        }
    }
    if !binding.decision.allowed {
        lines.push(("Retry-After", retry_after_seconds(binding.decision.retry_after_ms).to_string()));
    }
    lines
}

fn strategy() -> impl Gen<Value = Strategy> {
    prop_oneof![
        (1u64..1_000, 1u64..10_000_000, 1u64..1_000).prop_map(|(l, p, b)| Strategy::gcra(l, p, Some(b)).unwrap()),
        (1u64..1_000, 0.01f64..1_000.0).prop_map(|(c, r)| Strategy::token_bucket(c, r).unwrap()),
        (1u64..1u64 << 53, 1u64..1u64 << 53).prop_map(|(l, w)| Strategy::fixed_window(l, w).unwrap()),
        (1u64..1_000, 1u64..100_000).prop_map(|(l, w)| Strategy::sliding_window_log(l, w).unwrap()),
    ]
}

/// Numbers around the interesting edges (0, the sf-integer bound, i64's ends) and anywhere.
fn number() -> impl Gen<Value = i64> {
    prop_oneof![
        any::<i64>(),
        -2i64..200_000,
        (MAX_SF_INTEGER - 3)..(MAX_SF_INTEGER + 3),
        Just(i64::MIN),
        Just(i64::MAX),
        1_600_000_000_000i64..1_900_000_000_000,
    ]
}

fn decision() -> impl Gen<Value = Decision> {
    (any::<bool>(), number(), number(), number(), number(), proptest::bool::weighted(0.1)).prop_map(
        |(a, l, r, s, t, f)| Decision {
            allowed: a,
            limit: l,
            remaining: r,
            reset_at: s,
            retry_after_ms: t,
            fallback: f,
        },
    )
}

fn family() -> impl Gen<Value = Family> {
    prop_oneof![Just(Family::Draft10), Just(Family::Draft7), Just(Family::Draft6), Just(Family::Legacy)]
}

/// A name: usually plain, sometimes with what must be escaped (`"`, `\`, `%`, controls, UTF-8).
fn name() -> impl Gen<Value = String> {
    prop_oneof!["[a-z0-9_-]{1,12}", "[ -~]{1,12}", any::<String>().prop_filter("non-empty", |s| !s.is_empty())]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    #[test]
    fn every_entry_point_sends_the_old_bytes(
        names in proptest::collection::vec(name(), 1..4),
        strategies in proptest::collection::vec(strategy(), 4),
        decisions in proptest::collection::vec(decision(), 4),
        family in family(),
        now in number(),
        secret in proptest::option::of("[a-z]{1,8}"),
        policy_name in name().prop_filter("at most 256 bytes", |s| s.len() <= 256),
        unnamed in any::<bool>(),
    ) {
        let limits: Vec<LimitStatus> = names.iter().enumerate().map(|(i, n)| LimitStatus {
            name: if i == 0 && unnamed { None } else { Some(n.clone()) },
            key: Some(format!("key:{n}")),
            policy: strategies[i].http_policy(),
            decision: decisions[i],
        }).collect();
        let options = HeaderOptions { family, policy_name, partition_key_secret: secret };
        let want = old_lines(&limits, &options, now);
        prop_assert_eq!(&rate_limit_headers(&limits, &options, now).unwrap(), &want);
        let mut each = Vec::new();
        for_each_line(&limits, &options, now, |n, v| each.push((n, v.to_owned()))).unwrap();
        prop_assert_eq!(&each, &want);
        let block: String = want.iter().map(|(n, v)| format!("{n}: {v}\n")).collect();
        let mut out = String::from("kept\n");
        write_lines(&limits, &options, now, &mut HeaderBlock(&mut out)).unwrap();
        prop_assert_eq!(&out[5..], block.as_str());

        // A single limiter's path, with and without a key (pk only when both are there).
        for key in [None, Some("192.0.2.1")] {
            let single = [LimitStatus::single(&strategies[0], decisions[0], key)];
            let want: String =
                old_lines(&single, &options, now).iter().map(|(n, v)| format!("{n}: {v}\n")).collect();
            let mut out = String::new();
            write_single_lines(&strategies[0], &decisions[0], key, &options, now, &mut HeaderBlock(&mut out)).unwrap();
            prop_assert_eq!(out, want);
        }
    }
}
