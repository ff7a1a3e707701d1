//! The script calls each transform makes and how their replies decode.

use crate::redis::engine::value::Value;

use super::*;
use crate::algorithms::fixed_window::FixedWindow;

fn dims<'a>(strategies: &'a [Strategy], keys: &'a [&'a str]) -> Vec<DimensionCall<'a>> {
    strategies.iter().zip(keys).map(|(strategy, key)| DimensionCall { key, strategy, cost: 2 }).collect()
}

/// One dimension goes as its strategy's own check (the same call a single-key check of that
/// cost sends), under either rule; two go to the fused script.
#[test]
fn a_multi_check_of_one_dimension_is_its_single_key_check() {
    let s = [Strategy::fixed_window(5, 1000).unwrap(), Strategy::gcra(4, 1000, None).unwrap()];
    for rule in [Rule::All, Rule::Any] {
        for (now, first, shape) in [
            (Now::Server, 0, Shape::MultiOfOne),
            (
                Now::At(1_000),
                0,
                Shape::WindowCount(WindowCount {
                    now: 1_000,
                    cost: 2,
                    window: FixedWindow { limit: 5, window_ms: 1000 },
                    multi: true,
                }),
            ),
            (Now::At(1_000), 1, Shape::MultiOfOne),
        ] {
            let one = multi(rule, &dims(&s[first..first + 1], &["k"]), now);
            let check = single("k", now, &Transform::Check { strategy: &s[first], cost: 2 });
            assert_eq!(one.script.name, check.script.name);
            assert_eq!(one.shape, shape);
            assert_eq!(one.keys, check.keys);
            // The same ARGV (a fixed window on the caller's clock in `count` mode on both);
            // the single-key check reads its reply as a decision.
            assert_eq!(one.args.packed(), check.args.packed());
            let single_shape = match shape {
                Shape::WindowCount(w) => Shape::WindowCount(WindowCount { multi: false, ..w }),
                _ => Shape::Decision,
            };
            assert_eq!(check.shape, single_shape);
            let mode: &[u8] =
                if matches!(shape, Shape::WindowCount(_)) { b"$5\r\ncount\r\n" } else { b"$5\r\ncheck\r\n" };
            assert!(check.args.packed().windows(mode.len()).any(|w| w == mode));
        }
        let one = multi(rule, &dims(&s[..1], &["k"]), Now::At(1_000));
        assert_eq!(one.script.name, SCRIPTS.fixed_window.name);
        let two = multi(rule, &dims(&s, &["k", "j"]), Now::At(1_000));
        assert_eq!((two.script.name, two.shape), (SCRIPTS.multi.name, Shape::Multi));
    }
    // A lease keeps the fused script whatever the number of dimensions.
    let lease =
        multi_lease(Rule::All, &dims(&s[..1], &["k"]), &[DimensionLease { want: 3, lifetime_ms: 0 }], Now::At(1));
    assert_eq!((lease.script.name, lease.shape), (SCRIPTS.multi.name, Shape::MultiLease));
}

/// The single-key reply reads as a multi reply whose verdict is the decision's; anything
/// but a sane six-integer decision is the store's failure.
#[test]
fn a_single_key_reply_to_a_one_dimension_multi_decodes_as_a_multi_reply() {
    let s = [Strategy::fixed_window(5, 1000).unwrap()];
    let call = multi(Rule::All, &dims(&s, &["k"]), Now::Server);
    let ints = |v: &[i64]| Value::Array(v.iter().map(|&i| Value::Int(i)).collect());
    for (reply, allowed, ttl) in
        [(ints(&[1, 5, 3, 2000, 0, 1000]), true, Some(1000)), (ints(&[0, 5, 0, 2000, 1000, -1]), false, None)]
    {
        let Outcome::Multi(m) = decode_reply(&call, &reply).unwrap() else { panic!("not a multi reply") };
        assert_eq!(m.allowed, allowed);
        assert_eq!(m.decisions.len(), 1);
        assert_eq!((m.decisions[0].allowed, m.decisions[0].remaining), (allowed, if allowed { 3 } else { 0 }));
        let decoded = decode(&call, &reply).unwrap();
        assert_eq!(decoded.ttls, vec![ttl]);
        assert!(matches!(decoded.reply, Outcome::Multi(ref r) if r.allowed == allowed));
    }
    for bad in [ints(&[1, 1, 5, 3, 2000, 0, 1000]), ints(&[1, 5, 3, 2000, 7, 1000]), Value::Int(1)] {
        assert!(decode_reply(&call, &bad).is_err(), "{bad:?}");
        assert!(decode(&call, &bad).is_err(), "{bad:?}");
    }
}

/// A fixed-window check on the caller's clock, single-key or a one-dimension multi check, is
/// sent in `count` mode, and its integer reply (the count the window held) decodes to the
/// memory store's decision on a state holding that count: allowed with the TTL to the
/// window's end, or denied with nothing written; a negative count or any other reply is the
/// store's failure. The empty call a ticket rebuilds ([`decision_call`] with
/// [`counted_cost`]) decodes the same; on the server's clock, or for a peek or a forecast,
/// the six-integer reply stays.
#[test]
fn a_fixed_window_count_reply_decodes_to_the_memory_stores_decision() {
    let s = Strategy::fixed_window(5, 1000).unwrap();
    let now = 12_345;
    let check = single("k", Now::At(now), &Transform::Check { strategy: &s, cost: 2 });
    assert_eq!(counted_cost(&check), Some(2));
    let rebuilt = decision_call(&s, Now::At(now), counted_cost(&check));
    assert_eq!(rebuilt.shape, check.shape);
    for other in [
        single("k", Now::Server, &Transform::Check { strategy: &s, cost: 2 }),
        single("k", Now::At(now), &Transform::Peek { strategy: &s }),
        single("k", Now::At(now), &Transform::Forecast { strategy: &s, cost: 2 }),
        single("k", Now::At(now), &Transform::Check { strategy: &Strategy::gcra(5, 1000, None).unwrap(), cost: 2 }),
    ] {
        assert_eq!((other.shape, counted_cost(&other)), (Shape::Decision, None));
    }
    assert_eq!(decision_call(&s, Now::Server, Some(2)).shape, Shape::Decision);
    let call = multi(Rule::All, &dims(std::slice::from_ref(&s), &["k"]), Now::At(now));
    let packed = String::from_utf8_lossy(&call.args.packed()).into_owned();
    assert!(packed.contains("$5\r\ncount\r\n"), "{packed}");
    assert_eq!(packed, String::from_utf8_lossy(&check.args.packed()));
    for count in 0..=7u64 {
        let mut slot = Some(crate::state::State::Counter { start: 12_000, count });
        let want = s.check(&mut slot, now, 2, true);
        let decoded = decode(&call, &Value::Int(count as i64)).unwrap();
        assert_eq!(decoded.ttls, vec![want.ttl_ms], "count {count}");
        let got = match (decode_reply(&call, &Value::Int(count as i64)).unwrap(), decoded.reply) {
            (Outcome::Multi(a), Outcome::Multi(b)) => {
                assert_eq!((a.allowed, b.allowed), (want.reply.allowed, want.reply.allowed));
                assert_eq!(a.decisions, b.decisions);
                a.decisions[0]
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(got, want.reply, "count {count}");
        assert_eq!((got.allowed, got.reset_at), (count + 2 <= 5, 13_000));
        for single_call in [&check, &rebuilt] {
            let decoded = decode(single_call, &Value::Int(count as i64)).unwrap();
            assert_eq!(decoded.ttls, vec![want.ttl_ms], "count {count}");
            for reply in [decoded.reply, decode_reply(single_call, &Value::Int(count as i64)).unwrap()] {
                assert!(matches!(reply, Outcome::Single(Reply::Decision(d)) if d == want.reply), "count {count}");
            }
        }
    }
    let ints = Value::Array(vec![
        Value::Int(1),
        Value::Int(5),
        Value::Int(3),
        Value::Int(13_000),
        Value::Int(0),
        Value::Int(655),
    ]);
    for bad in [Value::Int(-1), ints, Value::Nil] {
        for call in [&call, &check, &rebuilt] {
            assert!(decode_reply(call, &bad).is_err(), "{bad:?}");
            assert!(decode(call, &bad).is_err(), "{bad:?}");
        }
    }
}

/// A fused check of fixed windows on the caller's clock asks multi.lua for counts (`count`
/// after the dimensions); the counts decode to each window's decision on that count, the
/// rule's verdict, and a TTL for each dimension the rule commits; a verdict that disagrees
/// with the rule's, a negative count or a wrong length is the store's failure. Any other
/// kind, the server's clock, more than four dimensions or a lease keep the six-integer reply.
#[test]
fn a_fused_fixed_window_count_reply_decodes_as_the_rule_commits() {
    let s = [Strategy::fixed_window(5, 1000).unwrap(), Strategy::fixed_window(3, 60_000).unwrap()];
    let now = 12_345;
    let ints = |v: &[i64]| Value::Array(v.iter().map(|&i| Value::Int(i)).collect());
    for rule in [Rule::All, Rule::Any] {
        let call = multi(rule, &dims(&s, &["k", "j"]), Now::At(now));
        assert!(matches!(call.shape, Shape::WindowCounts(w) if w.n == 2 && w.rule == rule));
        assert!(call.args.packed().ends_with(b"$5\r\ncount\r\n"));
        for (c0, c1) in [(0, 0), (3, 0), (4, 0), (0, 2), (4, 2), (9, 9)] {
            let w = |k: usize, count: u64| {
                let mut slot = Some(crate::state::State::Counter { start: [12_000, 0][k], count });
                s[k].check(&mut slot, now, 2, true)
            };
            let (a, b) = (w(0, c0), w(1, c1));
            let (admitted, commits) = crate::multi::commit_set(rule, &[a.reply, b.reply]);
            let reply = ints(&[i64::from(admitted), c0 as i64, c1 as i64]);
            let decoded = decode(&call, &reply).unwrap();
            let Outcome::Multi(m) = decoded.reply else { panic!("not a multi reply") };
            assert_eq!((m.allowed, m.decisions), (admitted, vec![a.reply, b.reply]), "{rule:?} {c0} {c1}");
            let ttls = vec![a.ttl_ms.filter(|_| commits[0]), b.ttl_ms.filter(|_| commits[1])];
            assert_eq!(decoded.ttls, ttls, "{rule:?} {c0} {c1}");
            assert!(matches!(decode_reply(&call, &reply).unwrap(), Outcome::Multi(r) if r.allowed == admitted));
            let wrong = ints(&[i64::from(!admitted), c0 as i64, c1 as i64]);
            assert!(decode_reply(&call, &wrong).is_err() && decode(&call, &wrong).is_err());
        }
        for bad in [ints(&[1, -1, 0]), ints(&[1, 0]), ints(&[1, 0, 0, 0]), Value::Int(0)] {
            assert!(decode_reply(&call, &bad).is_err() && decode(&call, &bad).is_err(), "{bad:?}");
        }
    }
    let mixed = [s[0].clone(), Strategy::gcra(4, 1000, None).unwrap()];
    assert_eq!(multi(Rule::All, &dims(&mixed, &["k", "j"]), Now::At(now)).shape, Shape::Multi);
    assert_eq!(multi(Rule::All, &dims(&s, &["k", "j"]), Now::Server).shape, Shape::Multi);
    let five: Vec<Strategy> = (0..5).map(|_| s[0].clone()).collect();
    let five_keys = ["a", "b", "c", "d", "e"];
    assert_eq!(multi(Rule::All, &dims(&five, &five_keys), Now::At(now)).shape, Shape::Multi);
    let leases = [DimensionLease { want: 3, lifetime_ms: 0 }; 2];
    assert_eq!(multi_lease(Rule::All, &dims(&s, &["k", "j"]), &leases, Now::At(now)).shape, Shape::MultiLease);
}

#[test]
fn a_kept_fraction_text_is_the_text_of_the_value_sent() {
    // `num` keeps the last fraction's text: each value still gets its own, in any order.
    let mut args = Args::new();
    for v in [0.5, 16_666_666.666_666_666, 0.5, 0.25, 0.25, -0.5, 3.0] {
        num(&mut args, v);
    }
    let texts: Vec<&[u8]> = args.iter().collect();
    let want: [&[u8]; 7] = [b"0.5", b"16666666.666666666", b"0.5", b"0.25", b"0.25", b"-0.5", b"3"];
    assert_eq!(texts, want);
}
