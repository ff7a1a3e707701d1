//! The Redis store over the Upstash REST protocol, against a real redis-server behind the test
//! front end (`tests/restfront/`): every vectors file decides as on the RESP store, byte for
//! byte (both plain scripts and the `allow-key-locking` variant); the prepared calls the
//! JavaScript glue makes decide as the RESP store does; `NOSCRIPT` falls back to `EVAL` once;
//! multi `all` is atomic; a front end that hangs, refuses, answers garbage or drops the
//! connection gives `store_unavailable` through the fail policy, within the timeout.
#![cfg(feature = "redis")]

#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/rest_client.rs"]
mod rest_client;
#[path = "support/restfront.rs"]
mod restfront;
#[path = "support/vectors.rs"]
mod vectors;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rest_client::{Client, RestOptions, RestStore};
use restfront::{RestFront, TOKEN};
use throttlekit::conformance::{self, Got};
use throttlekit::redis::rest::limiter::{RestCall, RestOp};
use throttlekit::redis::rest::{Locking, PATH_ONE, PATH_PIPELINE};
use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::{
    Clock, Dimension, ErrorCode, FailPolicy, LeakyBucketOptions, Limiter, ManualClock, MultiLimiter, Rule, Shaper,
    Store, Strategy, SystemClock,
};

fn options(front: &RestFront, locking: Locking) -> RestOptions {
    RestOptions { locking, timeout_ms: 5_000, ..RestOptions::new(&front.url(), TOKEN) }
}

/// A call's budget in the comparison below: it compares decisions, not latency, and thousands
/// of calls (a REST one: a new Python thread and Redis connection each) on a machine at load 20+
/// meet a slow one. The RESP store's default (1 s) once ran out there: its limiter answered a
/// fallback decision, and the two runs differed.
const COMPARE_TIMEOUT_MS: u64 = 20_000;

/// Where two runs of one suite first differ, said in one line: the op, its time and both
/// answers (a store's error included, with its message), not two dumps of every op.
fn first_difference(
    suite: &conformance::Suite,
    rest: &throttlekit::Result<Vec<Got>>,
    resp: &throttlekit::Result<Vec<Got>>,
) -> String {
    match (rest, resp) {
        (Ok(a), Ok(b)) => match a.iter().zip(b).position(|(x, y)| x != y) {
            Some(i) => format!("op {i} (now {}): REST gave {}, RESP gave {}", suite.ops[i].now, a[i], b[i]),
            None => format!("REST gave {} answers, RESP {}", a.len(), b.len()),
        },
        (a, b) => format!(
            "REST: {}, RESP: {}",
            a.as_ref().map_or_else(|e| format!("error {e}"), |g| format!("{} answers", g.len())),
            b.as_ref().map_or_else(|e| format!("error {e}"), |g| format!("{} answers", g.len()))
        ),
    }
}

/// Every suite of every vectors file, replayed on the REST store (deterministic replay, as the
/// RESP runs do) with each script variant, gives exactly the RESP store's results, and none
/// fails its expectations.
#[test]
fn every_vectors_file_decides_on_rest_as_on_resp() {
    let server = redis_server::RedisServer::start();
    let front = RestFront::start(server.port, "none");
    let resp_options = RedisOptions { timeout_ms: COMPARE_TIMEOUT_MS, ..RedisOptions::from_urls(&server.url()) };
    let mut resp = throttlekit::redis::conformance_stores_with(resp_options).expect("connect");
    let mut ops = 0;
    for file in vectors::files() {
        let text = std::fs::read_to_string(&file).expect("a readable vectors file");
        let Ok(parsed) = conformance::parse(&text) else { continue }; // HTTP and adaptive vectors need no store
        // The key-locking variant differs by its first line only: the smaller files suffice.
        let big = text.len() > 100_000;
        for locking in if big { &[Locking::Global][..] } else { &[Locking::Global, Locking::Keys][..] } {
            let locking = *locking;
            let rest_options = RestOptions { timeout_ms: COMPARE_TIMEOUT_MS, ..options(&front, locking) };
            let mut rest = rest_client::conformance_stores(rest_options).expect("REST stores");
            if locking == Locking::Global {
                let report = conformance::replay(&parsed, &mut rest);
                let failures = report.failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n");
                assert_eq!(report.failed, 0, "{}: {}\n{failures}", file.display(), report.summary());
            }
            for (i, suite) in parsed.suites.iter().enumerate() {
                let a = rest().and_then(|s| conformance::run_suite(suite, s));
                let b = resp().and_then(|s| conformance::run_suite(suite, s));
                assert!(a == b, "{} suite {i} ({locking:?}): {}", file.display(), first_difference(suite, &a, &b));
                ops += a.map_or(0, |g| g.len());
            }
        }
    }
    assert!(ops > 1000, "only {ops} ops compared");
    let (_, flagged) = front.stats();
    assert!(flagged > 0, "no script arrived with the allow-key-locking flag");
}

/// Drives a prepared call as the JavaScript glue does, over the native client.
fn drive(client: &Client, call: RestCall, paths: &mut Vec<&'static str>) -> RestCall {
    client.run(call, paths)
}

fn strategies() -> Vec<Strategy> {
    vec![
        Strategy::gcra(5, 60_000, Some(3)).unwrap(),
        Strategy::token_bucket(4, 0.05).unwrap(),
        Strategy::fixed_window(3, 60_000).unwrap(),
        Strategy::sliding_window(4, 120_000, Some(4)).unwrap(),
        Strategy::sliding_window_log(3, 60_000).unwrap(),
    ]
}

/// The calls the JavaScript glue prepares (check, peek, forecast, `check_many` in one
/// `/pipeline`, multi `all`/`any`, a shaper's reserve and reset) decide exactly as the RESP
/// store does on the same timeline, on the caller's clock and on Redis's. Periods of a minute: no key expires on Redis's clock
/// between a REST call and its RESP twin, however loaded the machine.
#[test]
fn prepared_rest_calls_decide_as_the_resp_store() {
    let server = redis_server::RedisServer::start();
    let front = RestFront::start(server.port, "none");
    let client = Client::new(&options(&front, Locking::Global)).unwrap();
    let redis: Arc<dyn Store> = Arc::new(RedisStore::connect_blocking(RedisOptions::from_urls(&server.url())).unwrap());
    let start = SystemClock.now_ms();
    let clock = ManualClock::new(start);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut paths = Vec::new();
    for server_clock in [false, true] {
        for (n, strategy) in strategies().into_iter().enumerate() {
            let build = |prefix: &str| {
                Limiter::builder(strategy.clone())
                    .store(redis.clone())
                    .clock(Arc::new(clock.clone()))
                    .server_clock(server_clock)
                    .prefix(format!("{prefix}{n}{server_clock}"))
                    .build()
            };
            let (rest, resp) = (build("rest"), build("resp"));
            for step in 0..12u64 {
                clock.advance(if server_clock { 0 } else { [0, 5_400, 18_000, 420][step as usize % 4] }).unwrap();
                for op in [RestOp::Check, RestOp::Peek, RestOp::Forecast] {
                    let call = rest.rest_prepare(op, "k", 1 + step % 2, Locking::Global).unwrap();
                    let got = rest.rest_finish(drive(&client, call, &mut paths)).unwrap();
                    let want = rt
                        .block_on(async {
                            match op {
                                RestOp::Check => resp.check("k", 1 + step % 2).await,
                                RestOp::Peek => resp.peek("k").await,
                                RestOp::Forecast => resp.forecast("k", 1 + step % 2).await,
                            }
                        })
                        .unwrap();
                    if server_clock {
                        // Redis's clock moved between the two calls: compare what it cannot move.
                        assert_eq!((got.allowed, got.limit, got.remaining), (want.allowed, want.limit, want.remaining));
                    } else {
                        assert_eq!(got, want, "{strategy:?} step {step} {op:?}");
                    }
                }
                if !server_clock {
                    let call = rest.rest_prepare_many(&["a", "b", "a"], 1, Locking::Global).unwrap();
                    let got = rest.rest_finish_many(drive(&client, call, &mut paths)).unwrap();
                    let want = rt.block_on(resp.check_many(&["a", "b", "a"], 1)).unwrap();
                    assert_eq!(got, want, "{strategy:?} step {step} check_many");
                }
            }
        }
    }
    assert!(paths.contains(&PATH_PIPELINE) && paths.contains(&PATH_ONE));
    // Multi all / any, two dimensions (the fused script), against the RESP store.
    for rule in [Rule::All, Rule::Any] {
        let build = |prefix: &str| {
            MultiLimiter::new(
                rule,
                vec![
                    Dimension::new("ip", Strategy::fixed_window(3, 60_000).unwrap()),
                    Dimension::new("user", Strategy::gcra(5, 60_000, Some(2)).unwrap()),
                ],
            )
            .unwrap()
            .with_store(redis.clone())
            .with_clock(Arc::new(clock.clone()))
            .with_prefix(format!("{prefix}{rule:?}"))
        };
        let (rest, resp) = (build("rest"), build("resp"));
        for step in 0..8 {
            let keys: [&str; 2] = ["1.2.3.4", if step % 3 == 0 { "u1" } else { "u2" }];
            let call = rest.rest_prepare(&keys, 1, Locking::Keys).unwrap();
            let got = rest.rest_finish(drive(&client, call, &mut paths)).unwrap();
            let want = rt.block_on(resp.check(&keys, 1)).unwrap();
            assert_eq!(got, want, "{rule:?} step {step}");
        }
    }
    // A shaper's reservations (the leaky bucket's script), accepted with a delay and refused,
    // and a reset, against the RESP store. 50 s a unit: every key written lives far longer
    // than the run (its TTL is its queue's length).
    let build = |prefix: &str| {
        Shaper::new(&LeakyBucketOptions { rate_per_sec: 0.02, max_queue_ms: 200_000.0 })
            .unwrap()
            .with_store(redis.clone())
            .with_clock(Arc::new(clock.clone()))
            .with_prefix(format!("{prefix}shaper"))
    };
    let (rest, resp) = (build("rest"), build("resp"));
    let mut seen = (false, false);
    for step in 0..24u64 {
        clock.advance([0, 3_000, 25_000, 500][step as usize % 4]).unwrap();
        if step == 15 {
            let reply = client.post(&rest.rest_reset("q").unwrap(), &[]).unwrap();
            throttlekit::redis::rest::finish_del(reply.status, &reply.body).unwrap();
            rt.block_on(resp.reset("q")).unwrap();
        }
        let call = rest.rest_prepare("q", 1 + step % 3, Locking::Keys).unwrap();
        let got = rest.rest_finish(drive(&client, call, &mut paths)).unwrap();
        let want = rt.block_on(resp.reserve("q", 1 + step % 3)).unwrap();
        assert_eq!(got, want, "shaper step {step}");
        seen = (seen.0 || (got.accepted && got.delay_ms > 0), seen.1 || !got.accepted);
    }
    assert_eq!(seen, (true, true), "the shaper's timeline queues and refuses");
}

/// With its script flushed, a call sends `EVALSHA`, meets `NOSCRIPT`, sends `EVAL` once and
/// decides; the next call finds the script again.
#[test]
fn noscript_falls_back_to_eval_once() {
    let server = redis_server::RedisServer::start();
    let front = RestFront::start(server.port, "none");
    let client = Client::new(&options(&front, Locking::Global)).unwrap();
    // A still clock and a key that lives for seconds on Redis's: the decisions cannot depend on
    // how long the checks take.
    let clock = ManualClock::new(SystemClock.now_ms());
    let limiter = Limiter::builder(Strategy::gcra(10, 60_000, None).unwrap()).clock(Arc::new(clock)).build();
    let run = |paths: &mut Vec<&'static str>| {
        let call = limiter.rest_prepare(RestOp::Check, "k", 1, Locking::Global).unwrap();
        limiter.rest_finish(drive(&client, call, paths)).unwrap()
    };
    let mut paths = Vec::new();
    redis_server::cli(server.port, &["SCRIPT", "FLUSH"]).expect("SCRIPT FLUSH");
    let before = (redis_server::calls(server.port, "evalsha"), redis_server::calls(server.port, "eval"));
    assert!(run(&mut paths).allowed);
    let after = (redis_server::calls(server.port, "evalsha"), redis_server::calls(server.port, "eval"));
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 1), "one EVALSHA, one EVAL");
    assert_eq!(paths.len(), 2);
    let d = run(&mut paths);
    assert_eq!(d.remaining, 8);
    assert_eq!(redis_server::calls(server.port, "eval"), after.1, "no EVAL once the script is cached");
    assert_eq!(redis_server::calls(server.port, "evalsha"), after.0 + 1);

    // reset over REST: the key is gone, the next check starts afresh.
    let del = limiter.rest_reset("k").unwrap();
    let reply = client.post(&del, &[]).unwrap();
    throttlekit::redis::rest::finish_del(reply.status, &reply.body).unwrap();
    assert_eq!(run(&mut paths).remaining, 9);
    let bad = throttlekit::redis::rest::finish_del(400, br#"{"error":"ERR wrong"}"#).unwrap_err();
    assert_eq!(bad.code(), ErrorCode::StoreUnavailable);

    // The front end's own protocol: a transaction, and base64 strings (as @upstash/redis asks).
    let post = |path: &'static str, body: &str, extra: &[(&str, &str)]| {
        let r = client
            .post(&throttlekit::redis::rest::Request { path, body: body.to_string(), hex: false }, extra)
            .unwrap();
        (r.status, serde_json::from_slice::<serde_json::Value>(&r.body).unwrap())
    };
    let (status, v) = post("/multi-exec", r#"[["SET","s","v1"],["INCR","n"],["GET","s"]]"#, &[]);
    assert_eq!((status, v), (200, serde_json::json!([{"result": "OK"}, {"result": 1}, {"result": "v1"}])));
    let (status, v) = post("/", r#"["GET","s"]"#, &[("Upstash-Encoding", "base64")]);
    assert_eq!((status, v), (200, serde_json::json!({"result": "djE="})));
    let (status, v) = post("/", r#"["INCR","s"]"#, &[]);
    assert_eq!(status, 400);
    assert!(v["error"].as_str().unwrap().starts_with("ERR"), "{v}");
}

/// Multi `all` over REST is one script call: a request one dimension denies commits nothing,
/// and concurrent requests on one key admit exactly the limit.
#[test]
fn multi_all_is_atomic_and_concurrent_checks_admit_exactly_the_limit() {
    let server = redis_server::RedisServer::start();
    let front = RestFront::start(server.port, "none");
    let client = Client::new(&options(&front, Locking::Keys)).unwrap();
    // Windows of a day on the system clock (Redis expires keys on its own): a window boundary
    // between the counted requests would start the counts over; a test of a few seconds meets
    // one with a probability of about 1 in 20,000.
    const DAY: u64 = 86_400_000;
    let limiter = MultiLimiter::new(
        Rule::All,
        vec![
            Dimension::new("tight", Strategy::fixed_window(1, DAY).unwrap()),
            Dimension::new("loose", Strategy::fixed_window(100, DAY).unwrap()),
        ],
    )
    .unwrap();
    let check = |keys: [&str; 2]| {
        let call = limiter.rest_prepare(&keys, 1, Locking::Keys).unwrap();
        limiter.rest_finish(drive(&client, call, &mut Vec::new())).unwrap()
    };
    assert!(check(["a", "shared"]).decision.allowed);
    for _ in 0..5 {
        let d = check(["a", "shared"]);
        assert!(!d.decision.allowed);
        assert_eq!(d.binding, "tight");
    }
    // The denied requests committed nothing on the loose dimension: 99 left after one admit.
    let d = check(["b", "shared"]);
    assert!(d.decision.allowed);
    assert_eq!(d.dimensions[1].remaining, 98);

    let single = Arc::new(Limiter::new(Strategy::fixed_window(25, DAY).unwrap()));
    let admitted: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (single, client) = (single.clone(), client.clone());
                s.spawn(move || {
                    (0..10)
                        .filter(|_| {
                            let call = single.rest_prepare(RestOp::Check, "hot", 1, Locking::Keys).unwrap();
                            single.rest_finish(drive(&client, call, &mut Vec::new())).unwrap().allowed
                        })
                        .count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(admitted, 25);
}

/// A front end that hangs, refuses, answers garbage or drops the connection: the call ends
/// within the timeout with `store_unavailable`, which each fail policy turns into its answer
/// (fail-open admits only with `fallback` set: never silently).
#[test]
fn a_failing_front_end_gives_store_unavailable_through_the_fail_policy() {
    let server = redis_server::RedisServer::start();
    for fault in ["hang", "refuse", "garbage", "drop"] {
        let front = RestFront::start(server.port, fault);
        let opts = RestOptions { timeout_ms: 300, ..RestOptions::new(&front.url(), TOKEN) };
        let client = Client::new(&opts).unwrap();
        for policy in [FailPolicy::Raise, FailPolicy::FailClosed, FailPolicy::FailOpen] {
            let limiter = Limiter::builder(Strategy::gcra(10, 1_000, None).unwrap()).fail_policy(policy).build();
            let started = Instant::now();
            let call = limiter.rest_prepare(RestOp::Check, "k", 1, Locking::Global).unwrap();
            let result = limiter.rest_finish(drive(&client, call, &mut Vec::new()));
            let took = started.elapsed();
            assert!(took < Duration::from_millis(2_000), "{fault}: took {took:?}");
            match (policy, result) {
                (FailPolicy::Raise, Err(e)) => assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{fault}: {e}"),
                (FailPolicy::FailClosed, Ok(d)) => assert!(!d.allowed && d.fallback, "{fault}: {d:?}"),
                (FailPolicy::FailOpen, Ok(d)) => assert!(d.allowed && d.fallback, "{fault}: {d:?}"),
                (p, r) => panic!("{fault} {p:?}: {r:?}"),
            }
            if fault == "hang" {
                assert!(took >= Duration::from_millis(250), "hang answered before the timeout: {took:?}");
            }
        }
        // The store path too: the limiter's own check through RestStore.
        let store = Arc::new(RestStore::new(&opts).unwrap());
        let limiter = Limiter::builder(Strategy::gcra(10, 1_000, None).unwrap())
            .store(store)
            .fail_policy(FailPolicy::FailClosed)
            .build();
        let d = limiter.check_sync("k", 1).unwrap();
        assert!(!d.allowed && d.fallback, "{fault}: {d:?}");
    }
    // A wrong token is refused (HTTP 401): store_unavailable too.
    let front = RestFront::start(server.port, "none");
    let client = Client::new(&RestOptions::new(&front.url(), "wrong")).unwrap();
    let limiter = Limiter::new(Strategy::gcra(10, 1_000, None).unwrap());
    let call = limiter.rest_prepare(RestOp::Check, "k", 1, Locking::Global).unwrap();
    let e = limiter.rest_finish(drive(&client, call, &mut Vec::new())).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StoreUnavailable);
    assert!(e.message().contains("401"), "{e}");
}
