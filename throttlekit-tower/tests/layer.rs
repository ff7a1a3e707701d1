//! The layer on a real axum server, driven by a real hyper client over loopback TCP.

mod support;

use std::sync::{Arc, Mutex};

use serde_json::Value;
use sfv::{BareItem, ListEntry, Parser};
use support::{get, get_with, serve, serve_router};
use throttlekit::http::{ClientKeyOptions, Family, HeaderOptions};
use throttlekit::{Dimension, Limiter, ManualClock, MultiLimiter, Rule, Strategy};
use throttlekit_tower::RateLimitLayer;

const NOW: i64 = 1_700_000_000_000;
// Fixed windows are epoch-aligned: NOW / 60000 = 28333333.33, so a 60 s window ends at
// 28333334 * 60000 = NOW + 40000, and its fields say t = 40, Retry-After 40.

/// The examples' limiter (GCRA 5 per 60 s, burst 5) on a manual clock, so `t` is exact.
fn gcra5(clock: &ManualClock) -> Limiter {
    Limiter::builder(Strategy::gcra(5, 60_000, Some(5)).unwrap()).clock(Arc::new(clock.clone())).build()
}

fn family(f: Family) -> HeaderOptions {
    HeaderOptions { family: f, ..HeaderOptions::default() }
}

fn sf_params(value: &str) -> Vec<(String, Vec<(String, BareItem)>)> {
    Parser::parse_list(value.as_bytes())
        .unwrap()
        .into_iter()
        .map(|m| match m {
            ListEntry::Item(i) => {
                let BareItem::String(name) = i.bare_item else { panic!("not an sf-string") };
                (name, i.params.into_iter().collect())
            }
            ListEntry::InnerList(_) => panic!("inner list"),
        })
        .collect()
}

#[tokio::test]
async fn five_admitted_with_r_counting_down_then_a_problem_429() {
    let clock = ManualClock::new(NOW);
    let addr = serve(RateLimitLayer::new(gcra5(&clock))).await;
    for r in (0..5).rev() {
        let reply = get(addr, "/limited").await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, "ok");
        assert_eq!(reply.header("ratelimit-policy"), Some("\"default\";q=5;w=60"));
        assert_eq!(reply.header("ratelimit"), Some(format!("\"default\";r={r};t=12").as_str()));
        assert_eq!(reply.header("retry-after"), None);
        // An independent parser reads the same numbers.
        let parsed = sf_params(reply.header("ratelimit").unwrap());
        assert_eq!(parsed[0].0, "default");
        assert_eq!(parsed[0].1[0], ("r".to_owned(), BareItem::Integer(r)));
    }
    let denied = get(addr, "/limited").await;
    assert_eq!(denied.status, 429);
    assert_eq!(denied.header("retry-after"), Some("12"));
    assert_eq!(denied.header("ratelimit"), Some("\"default\";r=0;t=12"));
    assert_eq!(denied.header("content-type"), Some("application/problem+json"));
    let body: Value = serde_json::from_str(&denied.body).unwrap();
    assert_eq!(body["type"], "https://iana.org/assignments/http-problem-types#quota-exceeded");
    assert_eq!(body["title"], "Too Many Requests");
    assert_eq!(body["status"], 429);
    assert_eq!(body["detail"], "Rate limit exceeded; retry in 12 seconds.");
    // The health check is skipped: never limited, no fields.
    let health = get(addr, "/healthz").await;
    assert_eq!(health.status, 200);
    assert!(health.rate_lines().is_empty());
    // 12 s later one unit is back.
    clock.advance(12_000).unwrap();
    assert_eq!(get(addr, "/limited").await.status, 200);
}

#[tokio::test]
async fn every_family_on_the_wire() {
    let expectations = [
        (
            Family::Draft6,
            vec![
                "ratelimit-policy: 5;w=60",
                "ratelimit-limit: 5",
                "ratelimit-remaining: 0",
                "ratelimit-reset: 60",
                "retry-after: 12",
            ],
        ),
        (
            Family::Draft7,
            vec!["ratelimit-policy: 5;w=60", "ratelimit: limit=5, remaining=0, reset=60", "retry-after: 12"],
        ),
        (
            Family::Legacy,
            vec![
                "x-ratelimit-limit: 5",
                "x-ratelimit-remaining: 0",
                "x-ratelimit-reset: 1700000060",
                "retry-after: 12",
            ],
        ),
        (
            Family::Draft10,
            vec!["ratelimit-policy: \"default\";q=5;w=60", "ratelimit: \"default\";r=0;t=12", "retry-after: 12"],
        ),
    ];
    for (f, want) in expectations {
        let clock = ManualClock::new(NOW);
        let addr = serve(RateLimitLayer::new(gcra5(&clock)).header_options(family(f)).unwrap()).await;
        for _ in 0..5 {
            assert_eq!(get(addr, "/limited").await.status, 200);
        }
        let denied = get(addr, "/limited").await;
        assert_eq!(denied.status, 429, "{f:?}");
        assert_eq!(denied.rate_lines(), want, "{f:?}");
    }
}

#[tokio::test]
async fn shadow_mode_reports_and_sends_fields_but_never_blocks() {
    let clock = ManualClock::new(NOW);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let limiter = Limiter::builder(Strategy::fixed_window(1, 60_000).unwrap()).clock(Arc::new(clock.clone())).build();
    let layer = RateLimitLayer::new(limiter).shadow(true).on_limited(move |e| seen.lock().unwrap().push(e.clone()));
    let addr = serve(layer).await;
    assert_eq!(get(addr, "/limited").await.status, 200);
    let over = get(addr, "/limited").await;
    assert_eq!(over.status, 200);
    assert_eq!(over.body, "ok");
    assert_eq!(over.header("ratelimit"), Some("\"default\";r=0;t=40"));
    assert_eq!(over.header("retry-after"), Some("40"));
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 1);
    assert!(events[0].shadow && !events[0].decision.allowed);
    assert_eq!(events[0].key, "127.0.0.1");
    assert_eq!(events[0].path, "/limited");
}

#[tokio::test]
async fn on_limited_hook_and_a_replaced_deny_response() {
    let clock = ManualClock::new(NOW);
    let hits = Arc::new(Mutex::new(0));
    let counted = hits.clone();
    let layer = RateLimitLayer::new(
        Limiter::builder(Strategy::fixed_window(1, 60_000).unwrap()).clock(Arc::new(clock.clone())).build(),
    )
    .on_limited(move |e| {
        assert!(!e.shadow);
        *counted.lock().unwrap() += 1;
    })
    .deny_response(|d| {
        let mut r = http::Response::new(bytes::Bytes::from(format!("slow down ({} ms)", d.retry_after_ms)));
        *r.status_mut() = http::StatusCode::TOO_MANY_REQUESTS;
        r
    });
    let addr = serve(layer).await;
    get(addr, "/limited").await;
    let denied = get(addr, "/limited").await;
    assert_eq!(denied.status, 429);
    assert_eq!(denied.body, "slow down (40000 ms)");
    assert_eq!(denied.header("retry-after"), Some("40"), "the fields are added to a replaced response too");
    assert_eq!(*hits.lock().unwrap(), 1);
}

#[tokio::test]
async fn cost_function_charges_more_than_one() {
    let clock = ManualClock::new(NOW);
    let layer =
        RateLimitLayer::new(gcra5(&clock)).cost_fn(|parts| if parts.uri.query() == Some("big") { 3 } else { 1 });
    let addr = serve(layer).await;
    assert_eq!(get(addr, "/limited?big").await.header("ratelimit"), Some("\"default\";r=2;t=12"));
    assert_eq!(get(addr, "/limited?big").await.status, 429);
    assert_eq!(get(addr, "/limited").await.status, 200);
}

#[tokio::test]
async fn untrusted_forwarding_is_ignored_so_spoofing_gets_no_fresh_bucket() {
    let clock = ManualClock::new(NOW);
    let limiter = Limiter::builder(Strategy::fixed_window(1, 60_000).unwrap()).clock(Arc::new(clock.clone())).build();
    let addr = serve(RateLimitLayer::new(limiter)).await;
    assert_eq!(get_with(addr, "/limited", &[("x-forwarded-for", "1.1.1.1")]).await.status, 200);
    assert_eq!(get_with(addr, "/limited", &[("x-forwarded-for", "2.2.2.2")]).await.status, 429);
    assert_eq!(get_with(addr, "/limited", &[("forwarded", "for=3.3.3.3")]).await.status, 429);
}

#[tokio::test]
async fn trusted_forwarding_takes_the_rightmost_untrusted_hop() {
    let clock = ManualClock::new(NOW);
    let limiter = Limiter::builder(Strategy::fixed_window(1, 60_000).unwrap()).clock(Arc::new(clock.clone())).build();
    let trust = ClientKeyOptions { trusted_proxies: vec!["127.0.0.1".into()], ..ClientKeyOptions::default() };
    let addr = serve(RateLimitLayer::new(limiter).client_key_options(&trust).unwrap()).await;
    let xff = |v: &'static str| [("x-forwarded-for", v)];
    assert_eq!(get_with(addr, "/limited", &xff("1.1.1.1")).await.status, 200);
    assert_eq!(get_with(addr, "/limited", &xff("2.2.2.2")).await.status, 200);
    assert_eq!(get_with(addr, "/limited", &xff("1.1.1.1")).await.status, 429);
    // A client prepending a made-up hop still lands on its own (rightmost untrusted) address.
    assert_eq!(get_with(addr, "/limited", &xff("9.9.9.9, 1.1.1.1")).await.status, 429);
}

#[tokio::test]
async fn ipv6_clients_are_grouped_by_their_64() {
    let clock = ManualClock::new(NOW);
    let limiter = Limiter::builder(Strategy::fixed_window(1, 60_000).unwrap()).clock(Arc::new(clock.clone())).build();
    let trust = ClientKeyOptions { trusted_proxies: vec!["127.0.0.0/8".into()], ..ClientKeyOptions::default() };
    let addr = serve(RateLimitLayer::new(limiter).client_key_options(&trust).unwrap()).await;
    let xff = |v: &'static str| [("x-forwarded-for", v)];
    assert_eq!(get_with(addr, "/limited", &xff("2001:db8::1")).await.status, 200);
    assert_eq!(get_with(addr, "/limited", &xff("2001:db8::ffff:2")).await.status, 429, "same /64");
    assert_eq!(get_with(addr, "/limited", &xff("2001:db8:0:1::1")).await.status, 200, "next /64");
}

#[tokio::test]
async fn a_multi_limiter_lists_every_dimension_binding_first() {
    let clock = ManualClock::new(NOW);
    let multi = MultiLimiter::new(
        Rule::All,
        vec![
            Dimension::new("burst", Strategy::gcra(5, 60_000, Some(5)).unwrap()),
            Dimension::new("minute", Strategy::fixed_window(2, 60_000).unwrap()),
        ],
    )
    .unwrap()
    .with_clock(Arc::new(clock.clone()));
    let addr = serve(RateLimitLayer::multi(multi)).await;
    let first = get(addr, "/limited").await;
    assert_eq!(first.header("ratelimit-policy"), Some("\"minute\";q=2;w=60, \"burst\";q=5;w=60"));
    assert_eq!(first.header("ratelimit"), Some("\"minute\";r=1;t=40, \"burst\";r=4;t=12"));
    get(addr, "/limited").await;
    let denied = get(addr, "/limited").await;
    assert_eq!(denied.status, 429);
    assert_eq!(denied.header("retry-after"), Some("40"));
    assert_eq!(denied.header("ratelimit"), Some("\"minute\";r=0;t=40, \"burst\";r=2;t=12"));
}

#[tokio::test]
async fn without_a_peer_address_the_request_fails_with_a_500_problem() {
    let limiter = Limiter::new(Strategy::gcra(5, 60_000, None).unwrap());
    let addr = serve_router(support::app(RateLimitLayer::new(limiter)), false).await;
    let reply = get(addr, "/limited").await;
    assert_eq!(reply.status, 500);
    assert_eq!(reply.header("content-type"), Some("application/problem+json"));
    let body: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(body["status"], 500);
    // A key function removes the need for the peer.
    let limiter = Limiter::new(Strategy::gcra(5, 60_000, None).unwrap());
    let layer = RateLimitLayer::new(limiter).key_fn(|_| Ok("everyone".into()));
    let addr = serve_router(support::app(layer), false).await;
    assert_eq!(get(addr, "/limited").await.status, 200);
}

#[test]
fn bad_options_are_config_invalid() {
    let layer = || RateLimitLayer::new(Limiter::new(Strategy::gcra(5, 60_000, None).unwrap()));
    let bad_trust = ClientKeyOptions { trusted_proxies: vec!["10.0.0.0/99".into()], ..ClientKeyOptions::default() };
    assert_eq!(layer().client_key_options(&bad_trust).err().unwrap().code().as_str(), "config_invalid");
    let bad_name = HeaderOptions { policy_name: String::new(), ..HeaderOptions::default() };
    assert_eq!(layer().header_options(bad_name).err().unwrap().code().as_str(), "config_invalid");
}

#[tokio::test]
async fn keys_fn_gives_each_dimension_its_own_key_and_pk_hides_it() {
    let clock = ManualClock::new(NOW);
    let multi = MultiLimiter::new(
        Rule::All,
        vec![
            Dimension::new("ip", Strategy::fixed_window(10, 60_000).unwrap()),
            Dimension::new("user", Strategy::fixed_window(1, 60_000).unwrap()),
        ],
    )
    .unwrap()
    .with_clock(Arc::new(clock.clone()));
    let layer = RateLimitLayer::multi(multi)
        .keys_fn(|parts| {
            let user = parts.headers.get("x-user").and_then(|v| v.to_str().ok()).unwrap_or("anonymous");
            Ok(vec!["shared-ip".to_owned(), user.to_owned()])
        })
        .header_options(HeaderOptions { partition_key_secret: Some("s3cret".into()), ..HeaderOptions::default() })
        .unwrap();
    let addr = serve(layer).await;
    let alice = get_with(addr, "/limited", &[("x-user", "alice")]).await;
    assert_eq!(alice.status, 200);
    // pk = base64(HMAC-SHA256("s3cret", "alice")), computed independently with Python's hmac.
    assert!(alice.header("ratelimit").unwrap().contains("pk=:dlVCrx8dWHvGDCGNylMqJY9WucIaQnzIGd4qH/bT4UY=:"));
    assert!(!alice.header("ratelimit").unwrap().contains("alice"));
    assert_eq!(get_with(addr, "/limited", &[("x-user", "alice")]).await.status, 429, "alice's own bucket is empty");
    assert_eq!(get_with(addr, "/limited", &[("x-user", "bob")]).await.status, 200, "bob has his own");
}

#[tokio::test]
async fn options_set_on_a_clone_leave_the_original_alone() {
    let clock = ManualClock::new(NOW);
    let limiter = Limiter::builder(Strategy::fixed_window(1, 60_000).unwrap()).clock(Arc::new(clock.clone())).build();
    let enforcing = RateLimitLayer::new(limiter);
    let shadow = enforcing.clone().shadow(true);
    let (enforcing, shadow) = (serve(enforcing).await, serve(shadow).await);
    assert_eq!(get(enforcing, "/limited").await.status, 200);
    assert_eq!(get(enforcing, "/limited").await.status, 429);
    // The same limiter (one bucket), but this copy only reports.
    let reported = get(shadow, "/limited").await;
    assert_eq!(reported.status, 200);
    assert_eq!(reported.header("retry-after"), Some("40"));
}

#[tokio::test]
async fn a_forwarding_line_that_is_not_text_stops_the_walk_instead_of_vanishing() {
    let clock = ManualClock::new(NOW);
    let limiter = Limiter::builder(Strategy::fixed_window(1, 60_000).unwrap()).clock(Arc::new(clock.clone())).build();
    let trust = ClientKeyOptions { trusted_proxies: vec!["127.0.0.1".into()], ..ClientKeyOptions::default() };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keys = seen.clone();
    let layer = RateLimitLayer::new(limiter)
        .client_key_options(&trust)
        .unwrap()
        .on_limited(move |e| keys.lock().unwrap().push(e.key.clone()));
    let app = support::app(layer);
    // Driven in process (the hyper client refuses to send such a value): two X-Forwarded-For
    // lines, the second not UTF-8. Read as one list, the walk meets garbage first and stops at
    // the trusted peer, so the key is 127.0.0.1, not 1.1.1.1.
    use tower_service::Service as _;
    let mut svc = app.into_service::<axum::body::Body>();
    for _ in 0..2 {
        let mut req = http::Request::get("/limited").body(axum::body::Body::empty()).unwrap();
        req.extensions_mut().insert(axum::extract::ConnectInfo(std::net::SocketAddr::from(([127, 0, 0, 1], 4000))));
        req.headers_mut().append("x-forwarded-for", http::HeaderValue::from_static("1.1.1.1"));
        req.headers_mut().append("x-forwarded-for", http::HeaderValue::from_bytes(b"\xff\xfe").unwrap());
        let _ = svc.call(req).await.unwrap();
    }
    assert_eq!(*seen.lock().unwrap(), vec!["127.0.0.1".to_owned()]);
}
