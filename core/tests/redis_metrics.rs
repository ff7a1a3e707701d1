//! Metrics on every path to Redis: N calls of a limiter, a multi limiter or a shaper down each
//! way a decision can reach a real redis-server (the sync path, the async path with and
//! without a runtime bound to the store, a binding's own transport through `prepare` and
//! `finish`, the leased and cached-deny modes), on one node, a 3-master cluster and under
//! Sentinel, move its counters by exactly N: a check as allowed or denied, a peek or a
//! forecast as such, a store that cannot be reached as a fallback or an error by the fail
//! policy; and every call that left the process through the store's own paths is timed.
#![cfg(feature = "redis")]

#[path = "support/redis_cluster.rs"]
mod redis_cluster;
#[path = "support/redis_sentinel.rs"]
mod redis_sentinel;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/redis_store.rs"]
mod redis_store;
#[path = "support/resp_wire.rs"]
mod resp_wire;

use std::sync::Arc;

use redis_server::RedisServer;
use resp_wire::{Wire, send};
use throttlekit::metrics::MetricsSnapshot;
use throttlekit::redis::transport::{self, Op};
use throttlekit::redis::{RedisMode, RedisOptions, RedisStore};
use throttlekit::{
    Decision, Dimension, ErrorCode, FailPolicy, LeakyBucketOptions, LeaseOptions, Limiter, ManualClock, Mode,
    MultiLimiter, Rule, Shaper, Strategy,
};

const N: u64 = 7;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn connect(options: RedisOptions) -> Arc<RedisStore> {
    Arc::new(RedisStore::connect_blocking(RedisOptions { timeout_ms: 5000, ..options }).expect("connect"))
}

fn one_node(server: &RedisServer) -> Arc<RedisStore> {
    connect(RedisOptions { urls: vec![server.url()], ..RedisOptions::default() })
}

/// What the counters say, as (checks decided, fallbacks, peeks, forecasts, errors, calls timed).
fn moved(s: &MetricsSnapshot) -> (u64, u64, u64, u64, u64, u64) {
    let errors = s.errors.iter().map(|e| e.1).sum();
    (s.allowed + s.denied, s.fallback_allowed + s.fallback_denied, s.peeks, s.forecasts, errors, s.latency_count())
}

/// N checks of a fresh limiter down each path on `store`: (4 allowed, 3 denied) each, nothing
/// else counted, each store call timed. Fixed window (its caller's-clock checks go in the
/// script's count mode, and a transport's finish decodes them from the ticket) and GCRA.
/// `rt` is the runtime the async calls run on (bound to the store or not).
fn checks_are_counted_once(rt: &tokio::runtime::Runtime, store: &Arc<RedisStore>, wire: Option<&mut Wire>, tag: &str) {
    let mut wire = wire;
    for strategy in [Strategy::fixed_window(4, 60_000).unwrap(), Strategy::gcra(4, 60_000, None).unwrap()] {
        let prefix = format!("{tag}:{}", strategy.kind());
        let build = |path: &str| {
            Limiter::builder(strategy.clone())
                .store(store.clone())
                .clock(Arc::new(ManualClock::new(1_000)))
                .prefix(format!("{prefix}:{path}"))
                .metrics(true)
                .build()
        };
        type Call = fn(&tokio::runtime::Runtime, &Limiter) -> Decision;
        let paths: [(&str, Call); 5] = [
            ("check_sync", |_, l| l.check_sync("k", 1).unwrap()),
            ("check", |rt, l| rt.block_on(l.check("k", 1)).unwrap()),
            ("check_many_sync", |_, l| l.check_many_sync(&["k"], 1).unwrap()[0]),
            ("check_many", |rt, l| rt.block_on(l.check_many(&["k"], 1)).unwrap()[0]),
            ("check_at", |rt, l| rt.block_on(l.check_at("k", 1, throttlekit::store::Now::At(1_000))).unwrap()),
        ];
        for (name, path) in paths {
            let l = build(name);
            for _ in 0..N {
                path(rt, &l);
            }
            let s = l.metrics().unwrap().snapshot();
            assert_eq!((s.allowed, s.denied), (4, 3), "{prefix} {name}");
            assert_eq!(moved(&s), (N, 0, 0, 0, 0, N), "{prefix} {name}: {s:?}");
        }
        let l = build("reads");
        for _ in 0..N {
            l.peek_sync("k").unwrap();
            rt.block_on(l.peek("k")).unwrap();
            l.forecast_sync("k", 1).unwrap();
            rt.block_on(l.forecast("k", 1)).unwrap();
        }
        assert_eq!(moved(&l.metrics().unwrap().snapshot()), (0, 0, 2 * N, 2 * N, 0, 4 * N), "{prefix} reads");
        // A binding's own transport: prepare, then finish from the reply (the whole call) or
        // from its ticket (what Node keeps), for each op.
        if let Some(wire) = wire.as_deref_mut() {
            for (name, by_ticket) in [("finish", false), ("finish_ticket", true)] {
                let l = build(name);
                for op in [Op::Check, Op::Peek, Op::Forecast] {
                    for _ in 0..N {
                        let call = l.prepare(op, "k", 1).unwrap();
                        let reply = send(wire, &call);
                        if by_ticket {
                            l.finish_ticket(call.ticket(), Ok(&reply))
                        } else {
                            l.finish(&call, Ok(&reply))
                        }
                        .unwrap();
                    }
                }
                let s = l.metrics().unwrap().snapshot();
                assert_eq!((s.allowed, s.denied), (4, 3), "{prefix} {name}");
                assert_eq!(moved(&s), (N, 0, N, N, 0, 0), "{prefix} {name}: {s:?}");
            }
            let l = build("prepare_many");
            for _ in 0..N {
                let calls = l.prepare_many(&["k"], 1).unwrap();
                let reply = send(wire, &calls[0]);
                l.finish_ticket(calls[0].ticket(), Ok(&reply)).unwrap();
            }
            assert_eq!(moved(&l.metrics().unwrap().snapshot()), (N, 0, 0, 0, 0, 0), "{prefix} prepare_many");
        }
    }
    // The two-tier modes: every call counted once, whether the tier or the store answered it.
    for mode in [Mode::CachedDeny { max_keys: 100 }, Mode::Leased(LeaseOptions { batch: 2, ..LeaseOptions::default() })]
    {
        let l = Limiter::builder(Strategy::fixed_window(4, 60_000).unwrap())
            .store(store.clone())
            .clock(Arc::new(ManualClock::new(1_000)))
            .prefix(format!("{tag}:{mode:?}"))
            .metrics(true)
            .mode(mode)
            .unwrap()
            .build();
        for _ in 0..N {
            l.check_sync("sync", 1).unwrap();
            rt.block_on(l.check("async", 1)).unwrap();
        }
        let s = l.metrics().unwrap().snapshot();
        assert_eq!((s.allowed, s.denied), (8, 6), "{mode:?}: {s:?}");
        let (_, fallbacks, peeks, forecasts, errors, _) = moved(&s);
        assert_eq!((fallbacks, peeks, forecasts, errors), (0, 0, 0, 0), "{mode:?}: {s:?}");
    }
}

/// N decisions of a multi limiter and of a shaper down each of their paths (sync, async, and
/// a binding's transport when `wire`), each counted once.
fn multi_and_shaper_are_counted_once(store: &Arc<RedisStore>, wire: Option<&mut Wire>, tag: &str) {
    let rt = runtime();
    let multi = MultiLimiter::new(
        Rule::All,
        vec![
            Dimension::new("a", Strategy::fixed_window(100, 60_000).unwrap()),
            Dimension::new("b", Strategy::gcra(100, 60_000, None).unwrap()),
        ],
    )
    .unwrap()
    .with_store(store.clone())
    .with_prefix(format!("{tag}:multi"))
    .with_metrics(true);
    let shaper = Shaper::new(&LeakyBucketOptions { rate_per_sec: 1000.0, max_queue_ms: 60_000.0 })
        .unwrap()
        .with_store(store.clone())
        .with_prefix(format!("{tag}:shaper"))
        .with_metrics(true);
    let mut transported = 0;
    let mut wire = wire;
    for _ in 0..N {
        multi.check_sync(&["x", "y"], 1).unwrap();
        rt.block_on(multi.check(&["x", "y"], 1)).unwrap();
        shaper.reserve_sync("x", 1).unwrap();
        rt.block_on(shaper.reserve("x", 1)).unwrap();
        if let Some(wire) = wire.as_deref_mut() {
            let call = multi.prepare(&["x", "y"], 1).unwrap();
            multi.finish(&call, Ok(&send(wire, &call))).unwrap();
            let call = shaper.prepare("x", 1).unwrap();
            shaper.finish(&call, Ok(&send(wire, &call))).unwrap();
            transported = 1;
        }
    }
    for (what, s) in [("multi", multi.metrics().unwrap().snapshot()), ("shaper", shaper.metrics().unwrap().snapshot())]
    {
        assert_eq!(moved(&s), ((2 + transported) * N, 0, 0, 0, 0, 2 * N), "{tag} {what}: {s:?}");
    }
}

#[test]
fn every_path_on_one_node_counts_each_call_once() {
    let server = RedisServer::start();
    let mut wire = Wire::open(server.port);
    checks_are_counted_once(&runtime(), &one_node(&server), Some(&mut wire), "plain");
    let (rt, bound) = (runtime(), one_node(&server));
    rt.block_on(redis_store::bind(&bound));
    checks_are_counted_once(&rt, &bound, None, "bound");
    multi_and_shaper_are_counted_once(&one_node(&server), Some(&mut wire), "node");
}

#[test]
fn every_path_on_a_cluster_counts_each_call_once() {
    let cluster = redis_cluster::RedisCluster::start(3, 0);
    let options = || RedisOptions { urls: cluster.urls(), mode: RedisMode::Cluster, ..RedisOptions::default() };
    checks_are_counted_once(&runtime(), &connect(options()), None, "cluster");
    let (rt, bound) = (runtime(), connect(options()));
    rt.block_on(async { bound.bind_current_runtime().unwrap() });
    redis_cluster::own_connections_up(&bound, &rt, 3);
    checks_are_counted_once(&rt, &bound, None, "cluster-bound");
    multi_and_shaper_are_counted_once(&connect(options()), None, "cluster");
}

#[test]
fn every_path_under_sentinel_counts_each_call_once() {
    let setup = redis_sentinel::SentinelSetup::start_with(&[]);
    let urls = setup.sentinels.iter().map(|s| format!("redis://127.0.0.1:{}", s.port)).collect();
    let store = connect(RedisOptions {
        urls,
        mode: RedisMode::Sentinel,
        service_name: Some(redis_sentinel::SERVICE.to_string()),
        ..RedisOptions::default()
    });
    checks_are_counted_once(&runtime(), &store, None, "sentinel");
    multi_and_shaper_are_counted_once(&store, None, "sentinel");
}

/// A store that cannot be reached: each call is one fallback (fail open, fail closed) or one
/// `store_unavailable` error (raise), on the sync and async paths and through a transport's
/// error or time-out.
#[test]
fn an_unreachable_store_counts_each_call_once_by_the_fail_policy() {
    let mut server = RedisServer::start();
    let store = one_node(&server);
    server.stop();
    let rt = runtime();
    for policy in [FailPolicy::FailOpen, FailPolicy::FailClosed, FailPolicy::Raise] {
        let l = Limiter::builder(Strategy::gcra(4, 60_000, None).unwrap())
            .store(store.clone())
            .fail_policy(policy)
            .metrics(true)
            .build();
        for _ in 0..N {
            let _ = l.check_sync("k", 1);
            let _ = rt.block_on(l.check("k", 1));
            let call = l.prepare(Op::Check, "k", 1).unwrap();
            let _ = l.finish_ticket(call.ticket(), Err(transport::transport_error("connection refused")));
            let _ = l.finish(&call, Err(transport::timed_out(5000)));
        }
        let s = l.metrics().unwrap().snapshot();
        let (fallbacks, errors) = if policy == FailPolicy::Raise { (0, 4 * N) } else { (4 * N, 0) };
        assert_eq!(moved(&s), (0, fallbacks, 0, 0, errors, 2 * N), "{policy:?}: {s:?}");
        assert_eq!(s.errors_of(ErrorCode::StoreUnavailable), errors);
        if policy == FailPolicy::FailOpen {
            assert_eq!(s.fallback_allowed, 4 * N);
        }
    }
}
