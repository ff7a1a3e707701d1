//! Properties of the HTTP edge on arbitrary input: header values never carry CR/LF or
//! non-printable bytes and always parse with an independent sfv parser; identity never panics
//! and never lets an untrusted peer's headers choose the key.

use std::net::IpAddr;

use proptest::prelude::*;
use proptest::strategy::Strategy as Gen;
use sfv::{BareItem, ListEntry, Parser};
use throttlekit::http::{ClientIdentity, ClientKeyOptions, Family, HeaderOptions, LimitStatus, rate_limit_headers};
use throttlekit::{Decision, Strategy};

fn strategy() -> impl Gen<Value = Strategy> {
    prop_oneof![
        (1u64..1_000, 1u64..10_000_000, 1u64..1_000).prop_map(|(l, p, b)| Strategy::gcra(l, p, Some(b)).unwrap()),
        (1u64..1_000, 0.01f64..1_000.0).prop_map(|(c, r)| Strategy::token_bucket(c, r).unwrap()),
        (1u64..1u64 << 53, 1u64..1u64 << 53).prop_map(|(l, w)| Strategy::fixed_window(l, w).unwrap()),
        (1u64..1_000, 1u64..100_000).prop_map(|(l, w)| Strategy::sliding_window_log(l, w).unwrap()),
    ]
}

fn decision() -> impl Gen<Value = Decision> {
    (any::<bool>(), any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>()).prop_map(|(a, l, r, s, t)| Decision {
        allowed: a,
        limit: l,
        remaining: r,
        reset_at: s,
        retry_after_ms: t,
        fallback: false,
    })
}

fn family() -> impl Gen<Value = Family> {
    prop_oneof![Just(Family::Draft6), Just(Family::Draft7), Just(Family::Draft10), Just(Family::Legacy)]
}

/// Undoes our percent-encoding of names (what a client would do to show the name).
fn unpercent(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn header_values_are_printable_and_parse(
        names in proptest::collection::vec(any::<String>(), 1..4),
        strategies in proptest::collection::vec(strategy(), 4),
        decisions in proptest::collection::vec(decision(), 4),
        family in family(),
        now in any::<i64>(),
        secret in proptest::option::of("[a-z]{1,8}"),
        policy_name in "[ -~]{1,20}",
    ) {
        let limits: Vec<LimitStatus> = names.iter().enumerate().map(|(i, n)| LimitStatus {
            name: if i == 0 { None } else { Some(n.clone()) },
            key: Some(n.clone()),
            policy: strategies[i].http_policy(),
            decision: decisions[i],
        }).collect();
        let options = HeaderOptions { family, policy_name: policy_name.clone(), partition_key_secret: secret };
        let lines = rate_limit_headers(&limits, &options, now).unwrap();
        for (name, value) in &lines {
            prop_assert!(value.bytes().all(|b| (0x20..=0x7e).contains(&b)), "{}: {:?}", name, value);
            prop_assert!(!value.is_empty());
        }
        if family == Family::Draft10 && !limits[0].decision.fallback {
            for (_, value) in lines.iter().filter(|(n, _)| n.starts_with("RateLimit")) {
                let list = Parser::parse_list(value.as_bytes()).map_err(|e| TestCaseError::fail(format!("{value:?}: {e}")))?;
                prop_assert_eq!(list.len(), limits.len());
                for (i, member) in list.iter().enumerate() {
                    let ListEntry::Item(item) = member else { return Err(TestCaseError::fail("inner list")) };
                    let BareItem::String(s) = &item.bare_item else { return Err(TestCaseError::fail("not a string")) };
                    let want = if i == 0 { policy_name.as_bytes().to_vec() } else { names[i].as_bytes().to_vec() };
                    prop_assert_eq!(unpercent(s), want);
                }
            }
        }
        let denied = !limits[0].decision.allowed;
        prop_assert_eq!(lines.iter().any(|(n, _)| *n == "Retry-After"), denied);
        if let Some((_, ra)) = lines.iter().find(|(n, _)| *n == "Retry-After") {
            prop_assert!(ra.parse::<i64>().unwrap() >= 1);
        }
    }

    #[test]
    fn identity_never_panics_and_untrusted_peers_choose_nothing(
        peer in any::<IpAddr>(),
        xff in ".{0,80}",
        fwd in ".{0,80}",
        prefix in 1u8..=128,
    ) {
        let headers = [("X-Forwarded-For", xff.as_str()), ("Forwarded", fwd.as_str())];
        let untrusting = ClientIdentity::new(&ClientKeyOptions { ipv6_prefix: prefix, ..Default::default() }).unwrap();
        let alone = untrusting.key(peer, &[]);
        prop_assert_eq!(untrusting.key(peer, &headers), alone);
        // Trusting everything still yields a key without panicking, and never CR/LF.
        let trusting = ClientIdentity::new(&ClientKeyOptions {
            trusted_proxies: vec!["0.0.0.0/0".into(), "::/0".into()],
            ipv6_prefix: prefix,
            ..Default::default()
        }).unwrap();
        let key = trusting.key(peer, &headers);
        prop_assert!(!key.contains('\r') && !key.contains('\n'));
        let _ = trusting.key_for_peer(&xff, &headers);
    }
}
