//! The store on a real 3-master Redis Cluster (started by the test, `support/redis_cluster.rs`):
//! every vectors file replays with no mismatch; single keys spread over every master and each
//! admits exactly its limit under concurrent clients; `check_many` spans slots; multi limiters
//! keep their keys in one slot per tag, and different tags reach every master; a node that lost
//! its script cache answers on that node; a signal handled mid sync call does not fail it;
//! decisions (a fixed window's count reply, a six-integer reply) are the memory store's, and a
//! reply that is no decision, or an error that only looks like a redirect, is
//! `store_unavailable` while the next call still reads its own reply. The last three hold on
//! both paths that read a reply by its first byte: the sync path's connections and a bound
//! runtime's own connection to each master ([`Path`]).
#![cfg(feature = "redis")]

#[path = "support/redis_cluster.rs"]
mod redis_cluster;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/signal.rs"]
mod signal;
#[path = "support/vectors.rs"]
mod vectors;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redis_cluster::{RedisCluster, cli};
use throttlekit::conformance;
use throttlekit::redis::{RedisMode, RedisOptions, RedisStore};
use throttlekit::store::Now;
use throttlekit::{Decision, Dimension, ErrorCode, FailPolicy, Limiter, MultiLimiter, Rule, Strategy};

const LIMIT: u64 = 7;
const NOW: i64 = 1_800_000_000_000;

fn options(cluster: &RedisCluster) -> RedisOptions {
    RedisOptions { urls: cluster.urls(), mode: RedisMode::Cluster, timeout_ms: 5000, ..RedisOptions::default() }
}

fn connect(cluster: &RedisCluster) -> Arc<RedisStore> {
    Arc::new(RedisStore::connect_blocking(options(cluster)).expect("connect to the cluster"))
}

/// A store whose URLs ask for RESP3 (`HELLO 3` on each of its own connections to a master).
fn connect_resp3(cluster: &RedisCluster) -> Arc<RedisStore> {
    let urls = cluster.urls().iter().map(|u| format!("{u}/?protocol=resp3")).collect();
    Arc::new(RedisStore::connect_blocking(RedisOptions { urls, ..options(cluster) }).expect("connect over RESP3"))
}

/// A fixed window of an hour: nothing refills during a test.
fn limiter(store: Arc<RedisStore>) -> Limiter {
    Limiter::builder(Strategy::fixed_window(LIMIT, 3_600_000).unwrap()).store(store).prefix("cl").build()
}

/// How a test's calls are made: `check_sync` on the calling thread (the store's own blocking
/// connections), or `check` awaited on a runtime bound to the store once its own connection to
/// every master is up (the store's own `Pipelined` connections on this plain-TCP URL:
/// `core/src/redis/cluster/local.rs`). Both read a reply by its first byte.
enum Path {
    Sync,
    Bound(tokio::runtime::Runtime),
}

impl Path {
    /// Both paths on `store`; the bound runtime's connections are up when this returns.
    fn both(store: &Arc<RedisStore>) -> [Path; 2] {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        redis_cluster::own_connections_up(store, &rt, 3);
        [Path::Sync, Path::Bound(rt)]
    }

    fn check(&self, l: &Limiter, key: &str, cost: u64, now: i64) -> throttlekit::Result<Decision> {
        match self {
            Path::Sync => l.check_sync_at(key, cost, now),
            Path::Bound(rt) => rt.block_on(l.check_at(key, cost, Now::At(now))),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Path::Sync => "sync",
            Path::Bound(_) => "bound runtime",
        }
    }
}

fn dbsize(port: u16) -> u64 {
    cli(port, &["dbsize"]).and_then(|s| s.trim().parse().ok()).expect("DBSIZE")
}

#[test]
fn every_vectors_file_replays_on_a_cluster_with_no_mismatch() {
    let cluster = RedisCluster::start(3, 0);
    let mut stores = throttlekit::redis::conformance_stores_with(options(&cluster)).expect("connect");
    let mut total = 0;
    for file in vectors::files() {
        let report = conformance::replay_path(&file, &mut stores).expect("a readable vectors file");
        assert!(
            report.failed == 0,
            "{}: {} on a cluster\n{}",
            file.display(),
            report.summary(),
            report.failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
        );
        total += report.passed;
    }
    assert!(total > 100, "only {total} ops replayed");
    // The replayed keys were spread over the slots, so every master held some.
    drop(stores);
}

#[test]
fn single_keys_spread_over_every_master_and_each_admits_exactly_its_limit() {
    let cluster = RedisCluster::start(3, 0);
    let shared = connect(&cluster);
    let keys: Vec<String> = (0..50).map(|i| format!("user:{i}")).collect();
    let admitted: Arc<Vec<AtomicU64>> = Arc::new(keys.iter().map(|_| AtomicU64::new(0)).collect());
    // Four threads, half on the shared store and half on their own connections (one of them
    // RESP3), each asking LIMIT + 3 times for every key: exactly LIMIT per key may pass.
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = match t {
                1 => connect(&cluster),
                3 => connect_resp3(&cluster),
                _ => shared.clone(),
            };
            let (keys, admitted) = (keys.clone(), admitted.clone());
            std::thread::spawn(move || {
                let l = limiter(store);
                for _ in 0..LIMIT + 3 {
                    for (i, k) in keys.iter().enumerate() {
                        if l.check_sync_at(k, 1, NOW).expect("no MOVED, no error").allowed {
                            admitted[i].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for (k, n) in keys.iter().zip(admitted.iter()) {
        assert_eq!(n.load(Ordering::Relaxed), LIMIT, "{k}");
    }
    // Over RESP3, on a bound runtime's own connection to each master too: every key is spent.
    let resp3 = connect_resp3(&cluster);
    for path in Path::both(&resp3) {
        for k in &keys {
            assert!(
                !path.check(&limiter(resp3.clone()), k, 1, NOW).expect("an answer").allowed,
                "{k} on {}",
                path.name()
            );
        }
    }
    let masters = cluster.master_ports();
    assert_eq!(masters.len(), 3);
    for port in masters {
        assert!(dbsize(port) > 0, "the master on {port} holds none of the 50 keys");
    }
}

#[test]
fn async_checks_and_check_many_span_slots() {
    let cluster = RedisCluster::start(3, 0);
    let store = connect(&cluster);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let l = Arc::new(limiter(store.clone()));
        let keys: Vec<String> = (0..30).map(|i| format!("many:{i}")).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        for round in 0..LIMIT + 2 {
            let ds = l.check_many(&refs, 1).await.expect("check_many over many slots");
            assert_eq!(ds.len(), keys.len());
            for d in ds {
                assert_eq!(d.allowed, round < LIMIT, "round {round}: {d:?}");
            }
        }
        // Concurrent async tasks on one key: exactly the limit.
        let tasks: Vec<_> = (0..40)
            .map(|_| {
                let l = l.clone();
                tokio::spawn(async move { l.check_at("hot", 1, Now::At(NOW)).await.unwrap().allowed as u64 })
            })
            .collect();
        let mut n = 0;
        for t in tasks {
            n += t.await.unwrap();
        }
        assert_eq!(n, LIMIT);
    });
}

#[test]
fn multi_limiters_keep_one_slot_per_tag_and_their_tags_reach_every_master() {
    let cluster = RedisCluster::start(3, 0);
    let store = connect(&cluster);
    let masters = cluster.master_ports();
    let before: Vec<u64> = masters.iter().map(|&p| dbsize(p)).collect();
    for tag in 0..12 {
        let m = Arc::new(
            MultiLimiter::new(
                Rule::All,
                vec![
                    Dimension::new("user", Strategy::fixed_window(LIMIT, 3_600_000).unwrap()),
                    Dimension::new("ip", Strategy::sliding_window_log(LIMIT + 2, 3_600_000).unwrap()),
                ],
            )
            .unwrap()
            .with_store(store.clone())
            .with_hash_tag(format!("tenant-{tag}"))
            .unwrap(),
        );
        let admitted = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let (m, admitted) = (m.clone(), admitted.clone());
                std::thread::spawn(move || {
                    for _ in 0..LIMIT {
                        if m.check_sync(&["u1", "10.0.0.1"], 1).expect("a fused call in one slot").decision.allowed {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(admitted.load(Ordering::Relaxed), LIMIT, "tag tenant-{tag}");
    }
    // Slots of tenant-0..11 fall in all three of redis-cli's even slot ranges.
    for (i, &p) in masters.iter().enumerate() {
        assert!(dbsize(p) > before[i], "no multi key reached the master on {p}");
    }
}

#[test]
fn a_node_that_lost_its_scripts_answers_on_that_node() {
    let cluster = RedisCluster::start(3, 0);
    let store = connect(&cluster);
    let l = limiter(store.clone());
    let masters = cluster.master_ports();
    let flushed = masters[1];
    // What each node has had to (re)load so far: EVAL after NOSCRIPT, or FUNCTION LOAD.
    let loads = |p: u16| cluster.calls(p, "eval") + cluster.calls(p, "function|load");
    for (round, path) in Path::both(&store).iter().enumerate() {
        let keys: Vec<String> = (0..30).map(|i| format!("flush{round}:{i}")).collect();
        for k in &keys {
            assert!(path.check(&l, k, 1, NOW).unwrap().allowed);
        }
        let before: Vec<u64> = masters.iter().map(|&p| loads(p)).collect();
        cli(flushed, &["script", "flush"]).expect("SCRIPT FLUSH");
        cli(flushed, &["function", "flush"]).expect("FUNCTION FLUSH");
        for k in &keys {
            let d = path.check(&l, k, 1, NOW).expect("answered after the flush");
            assert!(d.allowed);
            assert_eq!(d.remaining, LIMIT as i64 - 2, "{}: {k}", path.name());
        }
        // The flushed node reloaded what it lost (on that node); the others needed nothing.
        for (i, &p) in masters.iter().enumerate() {
            if p == flushed {
                assert!(loads(p) > before[i], "{}: the flushed node {p} never reloaded", path.name());
            } else {
                assert_eq!(loads(p), before[i], "{}: node {p} reloaded without losing anything", path.name());
            }
        }
    }
}

#[test]
fn the_documented_acl_with_cluster_slots_is_enough_on_a_cluster() {
    use throttlekit::redis::Scripting;
    use throttlekit::redis::acl::acl_rules;
    let cluster = RedisCluster::start(3, 0);
    let rules = acl_rules("cl", Scripting::Auto, RedisMode::Cluster);
    for n in &cluster.nodes {
        let mut args = vec!["acl", "setuser", "tk", ">pw"];
        args.extend(rules.iter().map(String::as_str));
        cli(n.port, &args).expect("ACL SETUSER");
    }
    let urls = cluster.nodes.iter().map(|n| format!("redis://tk:pw@127.0.0.1:{}", n.port)).collect();
    let store = RedisStore::connect_blocking(RedisOptions { urls, ..options(&cluster) }).expect("connect as tk");
    assert!(store.uses_functions());
    let l = Limiter::builder(Strategy::fixed_window(LIMIT, 3_600_000).unwrap())
        .store(Arc::new(store))
        .prefix("cl")
        .fail_policy(throttlekit::FailPolicy::Raise)
        .build();
    for i in 0..30 {
        assert!(l.check_sync(&format!("acl:{i}"), 1).expect("allowed by the ACL on every master").allowed);
    }
    for port in cluster.master_ports() {
        assert!(dbsize(port) > 0, "no key on {port}");
    }
}

/// A signal handled on the caller's thread while a sync call waits for its master's reply does
/// not fail the call: on a cluster too the sync path's connections are the store's own on a
/// plain-TCP RESP2 URL (`core/src/redis/wire.rs`), which read again after a handler (a
/// `recv` bounded by `SO_RCVTIMEO` is never restarted, even with `SA_RESTART`), so no
/// signals are held for the call.
#[test]
fn a_signal_handled_mid_call_does_not_fail_a_sync_call_on_a_cluster() {
    let cluster = RedisCluster::start(3, 0);
    let l = limiter(connect(&cluster));
    assert!(l.check_sync_at("signal", 1, NOW).unwrap().allowed); // scripts loaded, connections pooled
    signal::install();
    let caller = signal::this_thread();
    // Every master asleep for a second: the call below waits on its key's, whichever it is.
    let sleepers: Vec<_> = cluster.master_ports().into_iter().map(|p| redis_server::block_server(p, 1)).collect();
    let nudger = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        signal::send(caller); // the test's thread, alive until it joins this one
    });
    let answered = l.check_sync_at("signal", 1, NOW);
    nudger.join().unwrap();
    for s in sleepers {
        s.join().unwrap().expect("DEBUG SLEEP");
    }
    let d = answered.unwrap_or_else(|e| panic!("the call failed: {e}"));
    assert!(d.allowed && d.remaining == (LIMIT - 2) as i64, "{d:?}");
    assert!(signal::handled(), "the signal was lost");
}

/// Limiters of `strategy` on `store` and on the memory store, errors raised.
fn twins(store: &Arc<RedisStore>, strategy: Strategy, prefix: &str) -> (Limiter, Limiter) {
    let on = |b: throttlekit::LimiterBuilder| b.fail_policy(FailPolicy::Raise).prefix(prefix).build();
    (on(Limiter::builder(strategy.clone()).store(store.clone())), on(Limiter::builder(strategy)))
}

/// Both paths on a cluster read a reply by its first byte (`core/src/redis/wire.rs`, `answer`):
/// anything but an error is the decision, read where it lies. Decided that way, a run of checks
/// over keys on every master is exactly the memory store's, for the fixed window's `count` mode
/// (an integer reply), a six-integer reply (GCRA, token bucket) and a decision derived on the
/// server's side (sliding window).
#[test]
fn decisions_on_a_cluster_are_the_memory_stores() {
    let cluster = RedisCluster::start(3, 0);
    let store = connect(&cluster);
    let before: Vec<u64> = cluster.master_ports().iter().map(|&p| dbsize(p)).collect();
    for path in Path::both(&store) {
        let strategies = [
            ("fixed", Strategy::fixed_window(5, 10_000).unwrap()),
            ("gcra", Strategy::gcra(5, 10_000, Some(3)).unwrap()),
            ("bucket", Strategy::token_bucket(4, 0.5).unwrap()),
            ("sliding", Strategy::sliding_window(5, 10_000, None).unwrap()),
        ];
        for (name, strategy) in strategies {
            let prefix = format!("{name}-{}", path.name());
            let (cluster_l, memory_l) = twins(&store, strategy, &prefix);
            for i in 0..120u64 {
                let (key, cost, now) = (format!("same:{}", i % 12), 1 + i % 3, NOW + (i as i64) * 450);
                let (c, m) = (path.check(&cluster_l, &key, cost, now), memory_l.check_sync_at(&key, cost, now));
                assert_eq!(c.expect("the cluster answers"), m.unwrap(), "{prefix} {key} cost {cost} at {now}");
            }
        }
    }
    for (i, &p) in cluster.master_ports().iter().enumerate() {
        assert!(dbsize(p) > before[i], "no key reached the master on {p}");
    }
}

/// A library of our name whose every function returns `body` (what no real script sends).
fn odd_library(body: &str) -> String {
    use throttlekit::redis::scripts::{LIBRARY, SCRIPTS};
    let mut source = format!("#!lua name={}\n", LIBRARY.name);
    for s in SCRIPTS.all() {
        source.push_str(&format!("redis.register_function('{}', function(KEYS, ARGV) {body} end)\n", s.function));
    }
    source
}

/// Whatever a master answers that is no decision fails the call (sync, or on a bound runtime) with
/// `store_unavailable`, never a wrong decision: a string, a nil, an integer or six integers
/// that break a decision's invariants, and errors that look like a redirect or a cluster state
/// but are a script's (nothing is followed). Each such reply was read whole, so the connection
/// it came on stays in step: once the real library is back (flushed, then reloaded by the store
/// on each master at its next call), every call reads its own reply.
#[test]
fn odd_replies_on_a_cluster_are_store_unavailable_and_the_next_calls_read_their_own() {
    let cluster = RedisCluster::start(3, 0);
    let store = connect(&cluster);
    assert!(store.uses_functions(), "Redis >= 7: the odd replies come from a replaced library");
    let masters = cluster.master_ports();
    for (round, path) in Path::both(&store).iter().enumerate() {
        let keys: Vec<String> = (0..12).map(|i| format!("odd{round}:{i}")).collect();
        let pairs = [
            twins(&store, Strategy::fixed_window(LIMIT, 3_600_000).unwrap(), "cl"),
            twins(&store, Strategy::gcra(LIMIT, 3_600_000, None).unwrap(), "cl-gcra"),
        ];
        for k in &keys {
            for (c, m) in &pairs {
                assert_eq!(path.check(c, k, 1, NOW).unwrap(), m.check_sync_at(k, 1, NOW).unwrap());
            }
        }
        for body in [
            "return 'odd'",
            "return nil",
            "return -1",
            "return {2, 0, 2, 0, 0, 50}",
            "return {1, 7, 6}",
            "return redis.error_reply('MOVED garbage')",
            "return redis.error_reply('ASK')",
            "return redis.error_reply('CLUSTERDOWN says the script')",
        ] {
            let library = odd_library(body);
            for &p in &masters {
                cli(p, &["function", "load", "replace", &library]).expect("FUNCTION LOAD REPLACE");
            }
            for k in &keys {
                for (c, _) in &pairs {
                    let e = path.check(c, k, 1, NOW).expect_err(body);
                    assert_eq!(e.code(), ErrorCode::StoreUnavailable, "{}: {body}: {e}", path.name());
                }
            }
        }
        for &p in &masters {
            cli(p, &["function", "flush"]).expect("FUNCTION FLUSH");
        }
        for k in &keys {
            for (c, m) in &pairs {
                let d = path.check(c, k, 1, NOW).expect("answered after the flush");
                assert_eq!(d, m.check_sync_at(k, 1, NOW).unwrap(), "{}: {k}", path.name());
            }
        }
    }
}
