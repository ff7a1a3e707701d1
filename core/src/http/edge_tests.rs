//! The flow of [`HttpEdge`]: every fail policy against every kind of check result, shadow
//! mode, multi limiters (`all` and `any`), and the exact bytes of the bodies.

use proptest::prelude::*;
use proptest::strategy::Strategy as Gen;

use super::*;
use crate::http::headers::{HeaderBlock, rate_limit_headers};
use crate::http::outcome::error_response;
use crate::http::problem::{quota_exceeded_body, unavailable_body};
use crate::store::Rule;
use crate::{Dimension, Strategy};

const POLICIES: [FailPolicy; 3] = [FailPolicy::Raise, FailPolicy::FailOpen, FailPolicy::FailClosed];

fn edge(policy: FailPolicy, shadow: bool) -> HttpEdge {
    HttpEdge::from_json("", "", policy).unwrap().with_shadow(shadow)
}

fn single() -> Limiter {
    Limiter::builder(Strategy::gcra(5, 60_000, Some(5)).unwrap()).build()
}

fn multi(rule: Rule) -> MultiLimiter {
    MultiLimiter::new(
        rule,
        vec![
            Dimension::new("burst", Strategy::fixed_window(2, 1_000).unwrap()),
            Dimension::new("daily", Strategy::fixed_window(3, 86_400_000).unwrap()),
        ],
    )
    .unwrap()
}

fn lines(edge: &HttpEdge, l: &Limiter, key: &str, o: &Outcome) -> String {
    let mut out = String::new();
    edge.write_outcome_lines(l, key, o, &mut HeaderBlock(&mut out)).unwrap();
    out
}

fn block(pairs: &[(&'static str, String)]) -> String {
    pairs.iter().map(|(n, v)| format!("{n}: {v}\n")).collect()
}

#[test]
fn each_fail_policy_answers_an_unavailable_store_its_own_way() {
    let l = single();
    for shadow in [false, true] {
        for policy in POLICIES {
            let e = edge(policy, shadow);
            let o = e.settle(&l, Err(Error::store("down")), 7_000).unwrap();
            match policy {
                FailPolicy::Raise => {
                    assert_eq!((o.action, o.status(), o.decision), (Action::Unavailable, 503, None));
                    assert_eq!(o.body().unwrap(), unavailable_body());
                    assert_eq!(lines(&e, &l, "k", &o), "", "a 503 carries no rate-limit field");
                }
                FailPolicy::FailOpen => {
                    assert_eq!((o.action, o.status()), (Action::Forward, 0));
                    assert!(o.decision.unwrap().fallback);
                    assert_eq!((o.body(), o.content_type()), (None, None));
                    assert_eq!(lines(&e, &l, "k", &o), "", "nothing is known about the quota");
                }
                FailPolicy::FailClosed => {
                    let want = if shadow { (Action::Shadow, 0) } else { (Action::Deny, 429) };
                    assert_eq!((o.action, o.status()), want, "shadow {shadow}");
                    let d = o.decision.unwrap();
                    assert!(d.fallback && !d.allowed && d.limit == 5);
                    assert_eq!(lines(&e, &l, "k", &o), "Retry-After: 1\n");
                    if !shadow {
                        assert_eq!(o.body().unwrap(), quota_exceeded_body(&d));
                        assert_eq!(o.content_type(), Some("application/problem+json"));
                    }
                }
            }
            assert_eq!(o.now_ms, 7_000);
        }
    }
}

#[test]
fn errors_other_than_the_store_are_never_a_fallback() {
    let l = single();
    let m = multi(Rule::All);
    for policy in POLICIES {
        for shadow in [false, true] {
            let e = edge(policy, shadow);
            let err = e.settle(&l, Err(Error::config("key", "bad")), 0).unwrap_err();
            assert_eq!(err.code(), ErrorCode::ConfigInvalid);
            let err = e.settle_multi(&m, Err(Error::config("key", "bad")), 0).unwrap_err();
            assert_eq!(err.code(), ErrorCode::ConfigInvalid);
            // A bad cost goes the same way through the blocking check.
            assert_eq!(e.check(&l, "k", 0, 0).unwrap_err().code(), ErrorCode::ConfigInvalid);
        }
    }
}

#[test]
fn a_multi_limiters_fallback_names_its_first_dimension() {
    let m = multi(Rule::Any);
    for policy in POLICIES {
        let o = edge(policy, false).settle_multi(&m, Err(Error::store("down")), 10).unwrap();
        match policy {
            FailPolicy::Raise => assert_eq!((o.action, o.decision), (Action::Unavailable, None)),
            _ => {
                let d = o.decision.clone().unwrap();
                assert_eq!(d.binding, "burst");
                assert_eq!(d.dimensions, vec![d.decision; 2]);
                assert_eq!(d.decision.limit, 2);
                assert_eq!(m.fallback_with(policy, Error::store("down"), 10).unwrap(), d);
                assert_eq!(o.action, if policy == FailPolicy::FailOpen { Action::Forward } else { Action::Deny });
                let mut out = String::new();
                let keys = ["a", "a"];
                edge(policy, false).write_multi_outcome_lines(&m, &keys, &o, &mut HeaderBlock(&mut out)).unwrap();
                assert_eq!(out, if policy == FailPolicy::FailOpen { "" } else { "Retry-After: 1\n" });
            }
        }
    }
}

#[test]
fn shadow_mode_forwards_a_denial_with_every_field_it_carries() {
    let l = single();
    let (plain, shadow) = (edge(FailPolicy::Raise, false), edge(FailPolicy::Raise, true));
    for i in 0..6 {
        let a = plain.check(&l, "a", 1, 1_000).unwrap();
        let b = shadow.check(&l, "b", 1, 1_000).unwrap();
        assert_eq!(a.decision, b.decision, "shadow mode decides the same (request {i})");
        assert_eq!(lines(&plain, &l, "a", &a), lines(&shadow, &l, "b", &b));
        if i < 5 {
            assert_eq!((a.action, b.action), (Action::Forward, Action::Forward));
        } else {
            assert_eq!((a.action, b.action), (Action::Deny, Action::Shadow));
            assert!(a.action.limited() && b.action.limited() && b.action.forwards());
            assert_eq!((a.status(), b.status()), (429, 0));
            assert_eq!(b.body(), None);
            assert!(lines(&shadow, &l, "b", &b).ends_with("Retry-After: 12\n"));
        }
    }
}

#[test]
fn the_denial_body_is_cores_problem_with_the_same_wait_as_retry_after() {
    let l = single();
    let e = edge(FailPolicy::Raise, false);
    let mut last = None;
    for _ in 0..6 {
        last = Some(e.check(&l, "k", 1, 1_700_000_000_000).unwrap());
    }
    let o = last.unwrap();
    assert_eq!(o.action, Action::Deny);
    assert_eq!(
        lines(&e, &l, "k", &o),
        "RateLimit-Policy: \"default\";q=5;w=60\nRateLimit: \"default\";r=0;t=12\nRetry-After: 12\n"
    );
    assert_eq!(
        o.body().unwrap(),
        r#"{"detail":"Rate limit exceeded; retry in 12 seconds.","status":429,"title":"Too Many Requests","type":"https://iana.org/assignments/http-problem-types#quota-exceeded"}"#
    );
    let (status, body) = error_response("store_unavailable");
    assert_eq!((status, body.as_str()), (503, unavailable_body().as_str()));
    assert_eq!(
        unavailable_body(),
        r#"{"detail":"The rate limiter could not reach its store.","status":503,"title":"Service Unavailable","type":"https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"}"#
    );
    assert_eq!(
        error_response("config_invalid"),
        (
            500,
            r#"{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"rate limiter: config_invalid"}"#
                .to_owned()
        )
    );
    // A code is JSON text inside the body, escaped.
    let (_, odd) = error_response("a\"b");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&odd).unwrap()["detail"], "rate limiter: a\"b");
}

#[test]
fn multi_all_and_any_answer_by_the_binding_dimension() {
    for rule in [Rule::All, Rule::Any] {
        let m = multi(rule);
        let e = edge(FailPolicy::Raise, false);
        let keys = ["u1", "u1"];
        let mut actions = Vec::new();
        for i in 0..4 {
            let o = e.check_multi(&m, &keys, 1, 500).unwrap();
            let d = o.decision.clone().unwrap();
            assert_eq!(o.action, Action::of(&d.decision, false), "{rule:?} request {i}");
            let mut out = String::new();
            e.write_multi_outcome_lines(&m, &keys, &o, &mut HeaderBlock(&mut out)).unwrap();
            let want = rate_limit_headers(&LimitStatus::multi(&m, &d, &keys), e.header_options(), 500).unwrap();
            assert_eq!(out, block(&want), "{rule:?} request {i}");
            let first = out.lines().next().unwrap();
            assert!(first.starts_with(&format!("RateLimit-Policy: \"{}\"", d.binding)), "binding first: {first}");
            actions.push(o.action);
        }
        match rule {
            // burst (2 per second) binds from the third request on.
            Rule::All => assert_eq!(actions, [Action::Forward, Action::Forward, Action::Deny, Action::Deny]),
            // Any: daily (3) still admits the third; the fourth finds both spent.
            Rule::Any => assert_eq!(actions, [Action::Forward, Action::Forward, Action::Forward, Action::Deny]),
        }
    }
}

fn decision() -> impl Gen<Value = Decision> {
    (any::<bool>(), 0i64..100, 0i64..100, 0i64..10_000_000, 0i64..10_000_000, any::<bool>()).prop_map(
        |(allowed, limit, remaining, reset_at, retry_after_ms, fallback)| Decision {
            allowed,
            limit,
            remaining,
            reset_at,
            retry_after_ms,
            fallback,
        },
    )
}

fn result() -> impl Gen<Value = std::result::Result<Decision, ErrorCode>> {
    prop_oneof![
        3 => decision().prop_map(Ok),
        1 => Just(Err(ErrorCode::StoreUnavailable)),
        1 => Just(Err(ErrorCode::ConfigInvalid)),
        1 => Just(Err(ErrorCode::NotImplemented)),
    ]
}

proptest! {
    #[test]
    fn the_outcome_follows_the_result_the_policy_and_shadow(
        result in result(),
        policy in prop::sample::select(POLICIES.to_vec()),
        shadow in any::<bool>(),
        now in 0i64..10_000_000,
    ) {
        let l = single();
        let e = edge(policy, shadow);
        let got = e.settle(&l, result.map_err(|c| Error::new(c, "x")), now);
        let decision = match result {
            Ok(d) => Some(d),
            Err(ErrorCode::StoreUnavailable) => policy.fallback(Error::store("x"), 5, now).ok(),
            Err(code) => {
                prop_assert_eq!(got.unwrap_err().code(), code);
                return Ok(());
            }
        };
        let o = got.unwrap();
        prop_assert_eq!(o.decision, decision);
        prop_assert_eq!(o.now_ms, now);
        let want = match decision {
            None => Action::Unavailable,
            Some(d) if d.allowed => Action::Forward,
            Some(_) if shadow => Action::Shadow,
            Some(_) => Action::Deny,
        };
        prop_assert_eq!(o.action, want);
        prop_assert_eq!(o.status(), [0, 0, 429, 503][want.code() as usize]);
        prop_assert_eq!(o.action.limited(), decision.is_some_and(|d| !d.allowed));
        prop_assert_eq!(o.body().is_some(), o.status() != 0);
        prop_assert_eq!(o.content_type().is_some(), o.status() != 0);
        // The lines are the renderer's for the decision, or none when there is none.
        let want_lines = match decision {
            Some(d) => block(&rate_limit_headers(&[LimitStatus::single(l.strategy(), d, Some("k"))], e.header_options(), now).unwrap()),
            None => String::new(),
        };
        prop_assert_eq!(lines(&e, &l, "k", &o), want_lines);
    }
}
