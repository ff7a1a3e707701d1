//! The HTTP edge's pure functions on hand-worked examples: what `docs/http.md` promises.

use std::sync::Arc;

use throttlekit::http::{
    ClientIdentity, ClientKeyOptions, Family, ForwardedHeader, HeaderOptions, LimitStatus, json, rate_limit_headers,
    reset_seconds,
};
use throttlekit::{Dimension, Limiter, ManualClock, MultiLimiter, Rule, Strategy};

fn lines(v: Vec<(&'static str, String)>) -> Vec<String> {
    v.into_iter().map(|(n, v)| format!("{n}: {v}")).collect()
}

fn options(family: Family) -> HeaderOptions {
    HeaderOptions { family, ..HeaderOptions::default() }
}

/// GCRA 5 per 60 s, burst 5 (the examples' limiter): one unit every 12 s.
fn gcra_limiter(clock: &ManualClock) -> Limiter {
    Limiter::builder(Strategy::gcra(5, 60_000, Some(5)).unwrap()).clock(Arc::new(clock.clone())).build()
}

#[test]
fn draft10_t_is_the_time_to_the_next_unit_not_to_full_replenishment() {
    let clock = ManualClock::new(1_000_000);
    let limiter = gcra_limiter(&clock);
    let now = 1_000_000;
    let mut got = Vec::new();
    for _ in 0..6 {
        let d = limiter.check_sync_at("k", 1, now).unwrap();
        got.push(lines(
            rate_limit_headers(&[LimitStatus::single(limiter.strategy(), d, None)], &options(Family::Draft10), now)
                .unwrap(),
        ));
    }
    // After one request reset_at is +12 s, after five +60 s; the next unit is 12 s away in both.
    for (i, l) in got.iter().take(5).enumerate() {
        assert_eq!(
            l,
            &vec![
                "RateLimit-Policy: \"default\";q=5;w=60".to_owned(),
                format!("RateLimit: \"default\";r={};t=12", 4 - i),
            ]
        );
    }
    assert_eq!(
        got[5],
        vec!["RateLimit-Policy: \"default\";q=5;w=60", "RateLimit: \"default\";r=0;t=12", "Retry-After: 12"]
    );
}

/// A fixed window's `reset_seconds` is envoyproxy/ratelimit's `duration_until_reset`, computed
/// here their way (`unit - now_s % unit` on the whole epoch second) as the oracle: at a window's
/// first millisecond the whole unit, at its last 1 (never 0), and draft-6's `RateLimit-Reset`
/// says the same.
#[test]
fn reset_seconds_is_the_epoch_window_end_rounded_up() {
    for unit_s in [1i64, 60, 3600, 86_400, 7 * 86_400, 30 * 86_400, 365 * 86_400] {
        let w = unit_s * 1000;
        let limiter = Limiter::builder(Strategy::fixed_window(3, w as u64).unwrap()).build();
        let start = (1_700_000_000_000 / w + 1) * w;
        for (i, now) in [start, start + 1, start + w / 2 + 345, start + w - 1001, start + w - 1].into_iter().enumerate()
        {
            let d = limiter.check_sync_at(&format!("k{i}"), 1, now).unwrap();
            let theirs = unit_s - now.div_euclid(1000) % unit_s;
            assert_eq!(reset_seconds(&d, now), theirs, "unit {unit_s} s at {now}");
            let reset =
                rate_limit_headers(&[LimitStatus::single(limiter.strategy(), d, None)], &options(Family::Draft6), now)
                    .unwrap()
                    .into_iter()
                    .find(|(n, _)| *n == "RateLimit-Reset")
                    .unwrap();
            assert_eq!(reset.1, theirs.to_string(), "unit {unit_s} s at {now}");
        }
        assert_eq!(reset_seconds(&limiter.check_sync_at("s", 1, start).unwrap(), start), unit_s);
        assert_eq!(reset_seconds(&limiter.check_sync_at("e", 1, start + w - 1).unwrap(), start + w - 1), 1);
    }
    // Already at full capacity (a GCRA key never used): nothing to wait for.
    let idle = Limiter::builder(Strategy::gcra(5, 60_000, None).unwrap()).build();
    assert_eq!(reset_seconds(&idle.peek_sync_at("idle", 1_000).unwrap(), 1_000), 0);
}

#[test]
fn every_family_on_one_denial() {
    let clock = ManualClock::new(1_700_000_000_000);
    let limiter = Limiter::builder(Strategy::fixed_window(2, 60_000).unwrap()).clock(Arc::new(clock.clone())).build();
    let now = 1_700_000_030_500; // 30.5 s into a window that ends at ...040_000? No: windows align to epoch.
    // 1_700_000_030_500 / 60_000 = 28_333_333.84..., so the window ends at 28_333_334 * 60_000 = 1_700_000_040_000.
    limiter.check_sync_at("k", 2, now).unwrap();
    let d = limiter.check_sync_at("k", 1, now).unwrap();
    assert!(!d.allowed);
    assert_eq!(d.reset_at, 1_700_000_040_000);
    assert_eq!(d.retry_after_ms, 9_500);
    let status = [LimitStatus::single(limiter.strategy(), d, None)];
    let render = |f| lines(rate_limit_headers(&status, &options(f), now).unwrap());
    assert_eq!(
        render(Family::Draft10),
        vec!["RateLimit-Policy: \"default\";q=2;w=60", "RateLimit: \"default\";r=0;t=10", "Retry-After: 10"]
    );
    assert_eq!(
        render(Family::Draft7),
        vec!["RateLimit-Policy: 2;w=60", "RateLimit: limit=2, remaining=0, reset=10", "Retry-After: 10"]
    );
    assert_eq!(
        render(Family::Draft6),
        vec![
            "RateLimit-Policy: 2;w=60",
            "RateLimit-Limit: 2",
            "RateLimit-Remaining: 0",
            "RateLimit-Reset: 10",
            "Retry-After: 10"
        ]
    );
    assert_eq!(
        render(Family::Legacy),
        vec!["X-RateLimit-Limit: 2", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: 1700000040", "Retry-After: 10"]
    );
}

#[test]
fn multi_lists_the_binding_dimension_first() {
    let multi = MultiLimiter::new(
        Rule::All,
        vec![
            Dimension::new("ip", Strategy::gcra(100, 60_000, Some(100)).unwrap()),
            Dimension::new("user", Strategy::fixed_window(1, 10_000).unwrap()),
        ],
    )
    .unwrap();
    let now = 50_000;
    let keys = ["192.0.2.1", "alice"];
    multi.check_sync_at(&keys, 1, now).unwrap();
    let d = multi.check_sync_at(&keys, 1, now).unwrap();
    assert_eq!(d.binding, "user");
    let status = LimitStatus::multi(&multi, &d, &keys);
    assert_eq!(
        lines(rate_limit_headers(&status, &options(Family::Draft10), now).unwrap()),
        vec![
            "RateLimit-Policy: \"user\";q=1;w=10, \"ip\";q=100;w=60",
            // The ip dimension reports its own decision as the multi limiter returned it: as if
            // charged (98), although an `all` denial charged nothing. Conservative, documented.
            "RateLimit: \"user\";r=0;t=10, \"ip\";r=98;t=1",
            "Retry-After: 10",
        ]
    );
}

#[test]
fn pk_is_an_hmac_never_the_key() {
    let strategy = Strategy::gcra(5, 60_000, None).unwrap();
    let d = Limiter::new(strategy.clone()).check_sync_at("192.0.2.1", 1, 0).unwrap();
    let opts = HeaderOptions { partition_key_secret: Some("s3cret".into()), ..HeaderOptions::default() };
    let got = lines(rate_limit_headers(&[LimitStatus::single(&strategy, d, Some("192.0.2.1"))], &opts, 0).unwrap());
    assert!(got.iter().all(|l| !l.contains("192.0.2.1")));
    assert!(got[0].contains(";pk=:") && got[1].contains(";pk=:"), "{got:?}");
}

#[test]
fn bad_options_are_config_invalid() {
    let long_name = format!(r#"{{"policyName": "{}"}}"#, "x".repeat(257));
    for bad in [
        r#"{"family": "draft-8"}"#,
        r#"{"policyName": ""}"#,
        long_name.as_str(),
        r#"{"partitionKeySecret": ""}"#,
        r#"{"colour": "red"}"#,
        "not json",
    ] {
        let err = HeaderOptions::from_json(bad).unwrap_err();
        assert_eq!(err.code().as_str(), "config_invalid", "{bad}");
    }
    for bad in [r#"{"ipv6Prefix": 0}"#, r#"{"ipv6Prefix": 129}"#, r#"{"trustedProxies": ["10.0.0.0/33"]}"#] {
        let err = ClientKeyOptions::from_json(bad).and_then(|o| ClientIdentity::new(&o)).unwrap_err();
        assert_eq!(err.code().as_str(), "config_invalid", "{bad}");
    }
    let err = json::headers_json(r#"{"nowMs": 0, "limits": []}"#).unwrap_err();
    assert_eq!(err.code().as_str(), "config_invalid");
    // The message names the offending field.
    let err = ClientIdentity::new(&ClientKeyOptions::from_json(r#"{"trustedProxies": ["::1", "nope"]}"#).unwrap())
        .unwrap_err();
    assert!(err.message().starts_with("http.trustedProxies[1]"), "{}", err.message());
    let ok = format!(r#"{{"policyName": "{}"}}"#, "x".repeat(256));
    assert!(HeaderOptions::from_json(&ok).is_ok(), "256 bytes is the longest name");
}

fn identity(trusted: &[&str], header: ForwardedHeader) -> ClientIdentity {
    ClientIdentity::new(&ClientKeyOptions {
        trusted_proxies: trusted.iter().map(|s| s.to_string()).collect(),
        forwarded_header: header,
        ..ClientKeyOptions::default()
    })
    .unwrap()
}

#[test]
fn forwarded_hops_count_only_behind_a_trusted_proxy() {
    let xff = [("X-Forwarded-For", "6.6.6.6, 203.0.113.7")];
    // No trusted proxies: the peer, whatever the header says.
    assert_eq!(identity(&[], ForwardedHeader::XForwardedFor).key_for_peer("10.0.0.1", &xff).unwrap(), "10.0.0.1");
    // Behind a trusted proxy: the rightmost untrusted hop, not the spoofable leftmost.
    let id = identity(&["10.0.0.0/8"], ForwardedHeader::XForwardedFor);
    assert_eq!(id.key_for_peer("10.0.0.1", &xff).unwrap(), "203.0.113.7");
    // A peer outside the trust list is the client even if it sends a header.
    assert_eq!(id.key_for_peer("198.51.100.9", &xff).unwrap(), "198.51.100.9");
    // RFC 7239, quoted IPv6 with a port, grouped by /64.
    let fwd = [("Forwarded", "for=6.6.6.6, for=\"[2001:db8:cafe:1:2:3:4:5]:4711\";proto=https")];
    let id = identity(&["10.0.0.0/8"], ForwardedHeader::Forwarded);
    assert_eq!(id.key_for_peer("10.1.1.1", &fwd).unwrap(), "2001:db8:cafe:1::/64");
    // IPv4-mapped peers are IPv4.
    assert_eq!(id.key_for_peer("::ffff:192.0.2.44", &[]).unwrap(), "192.0.2.44");
    assert_eq!(id.key_for_peer("not an ip", &[]).unwrap_err().code().as_str(), "config_invalid");
}

#[test]
fn the_problem_body_is_rfc9457_and_names_the_retry_after() {
    let d = throttlekit::Decision {
        allowed: false,
        limit: 5,
        remaining: 0,
        reset_at: 0,
        retry_after_ms: 1,
        fallback: false,
    };
    let body: serde_json::Value = serde_json::from_str(&throttlekit::http::quota_exceeded_body(&d)).unwrap();
    assert_eq!(body["type"], throttlekit::http::QUOTA_EXCEEDED_TYPE);
    assert_eq!(body["title"], "Too Many Requests");
    assert_eq!(body["status"], 429);
    assert_eq!(body["detail"], "Rate limit exceeded; retry in 1 second.");
    let body: serde_json::Value = serde_json::from_str(&throttlekit::http::unavailable_body()).unwrap();
    assert_eq!(body["status"], 503);
}
