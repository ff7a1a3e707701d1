//! Atomicity on a real Redis: many clients — threads sharing a store, threads with their own
//! connections, async tasks, and separate processes — hammer one key with limit K, and exactly
//! K requests are admitted, round after round. Plus the paths that make this usable from any
//! caller: the server clock, and awaiting the store from an executor that is not tokio.
#![cfg(feature = "redis")]

#[path = "support/executor.rs"]
mod executor;
#[path = "support/redis_server.rs"]
mod redis_server;

use executor::block_on;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use redis_server::RedisServer;
use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::store::Now;
use throttlekit::{Dimension, Limiter, MultiLimiter, Rule, Strategy};

const LIMIT: u64 = 37;
const CLIENTS: usize = 8;
const CALLS_PER_CLIENT: usize = 20;

fn connect(url: &str) -> Arc<RedisStore> {
    Arc::new(
        RedisStore::connect_blocking(RedisOptions {
            urls: vec![url.to_string()],
            timeout_ms: 5000,
            deterministic_replay: false,
            ..RedisOptions::default()
        })
        .unwrap(),
    )
}

/// A fixed window of an hour: nothing refills during a round, so admissions must equal LIMIT.
fn limiter(store: Arc<RedisStore>) -> Limiter {
    Limiter::builder(Strategy::fixed_window(LIMIT, 3_600_000).unwrap()).store(store).prefix("atomic").build()
}

const NOW: i64 = 1_800_000_000_000;

#[test]
fn threads_on_one_store_and_on_their_own_connections_admit_exactly_the_limit() {
    let server = RedisServer::start();
    let shared = connect(&server.url());
    for round in 0..5 {
        let key = format!("round{round}");
        let admitted = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..CLIENTS)
            .map(|i| {
                // Half the threads share one multiplexed connection, half bring their own.
                let store = if i % 2 == 0 { shared.clone() } else { connect(&server.url()) };
                let (key, admitted) = (key.clone(), admitted.clone());
                std::thread::spawn(move || {
                    let l = limiter(store);
                    for _ in 0..CALLS_PER_CLIENT {
                        if l.check_sync_at(&key, 1, NOW).unwrap().allowed {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(admitted.load(Ordering::Relaxed) as u64, LIMIT, "round {round}");
    }
}

#[test]
fn concurrent_async_tasks_admit_exactly_the_limit_also_through_the_fused_script() {
    let server = RedisServer::start();
    let store = connect(&server.url());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let l = Arc::new(limiter(store.clone()));
        let multi = Arc::new(
            MultiLimiter::new(
                Rule::All,
                vec![
                    Dimension::new("user", Strategy::fixed_window(LIMIT, 3_600_000).unwrap()),
                    Dimension::new("ip", Strategy::sliding_window_log(LIMIT + 5, 3_600_000).unwrap()),
                ],
            )
            .unwrap()
            .with_store(store.clone())
            .with_hash_tag("tenant-7")
            .unwrap(),
        );
        for round in 0..3 {
            let key = format!("async{round}");
            let tasks: Vec<_> = (0..100)
                .map(|_| {
                    let (l, m, key) = (l.clone(), multi.clone(), key.clone());
                    tokio::spawn(async move {
                        let single = l.check_at(&key, 1, Now::At(NOW)).await.unwrap().allowed;
                        let fused = m.check_at(&[&key, &key], 1, Now::At(NOW)).await.unwrap().decision.allowed;
                        (single as u64, fused as u64)
                    })
                })
                .collect();
            let (mut single, mut fused) = (0, 0);
            for t in tasks {
                let (s, f) = t.await.unwrap();
                single += s;
                fused += f;
            }
            assert_eq!(single, LIMIT, "round {round}: single key");
            assert_eq!(fused, LIMIT, "round {round}: fused all over keys sharing {{tenant-7}}");
        }
    });
    // Both multi keys carry the tag, so they live in one cluster hash slot.
    assert_eq!(
        MultiLimiter::new(Rule::Any, vec![Dimension::new("user", Strategy::gcra(1, 1, None).unwrap())])
            .unwrap()
            .with_hash_tag("tenant-7")
            .unwrap()
            .dimension_key("user", "u1"),
        "{tenant-7}:user:u1"
    );
}

/// The child side of the multi-process test: does nothing unless the parent set the env vars.
/// (A plain `cargo test` runs it as a no-op, which is its whole job then.)
#[test]
fn child_process_hammer() {
    let (Ok(url), Ok(key)) = (std::env::var("TK_ATOMIC_URL"), std::env::var("TK_ATOMIC_KEY")) else { return };
    let l = limiter(connect(&url));
    let admitted = (0..CALLS_PER_CLIENT).filter(|_| l.check_sync_at(&key, 1, NOW).unwrap().allowed).count();
    println!("ADMITTED={admitted}");
}

#[test]
fn separate_processes_admit_exactly_the_limit() {
    let server = RedisServer::start();
    let exe = std::env::current_exe().unwrap();
    for round in 0..3 {
        let key = format!("proc{round}");
        let children: Vec<_> = (0..CLIENTS)
            .map(|_| {
                Command::new(&exe)
                    .args(["--exact", "child_process_hammer", "--nocapture", "--test-threads", "1"])
                    .env("TK_ATOMIC_URL", server.url())
                    .env("TK_ATOMIC_KEY", &key)
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut admitted = 0u64;
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success());
            let text = String::from_utf8_lossy(&out.stdout);
            let n = text
                .lines()
                .find_map(|l| l.split_once("ADMITTED=").map(|x| x.1))
                .unwrap_or_else(|| panic!("no count in {text}"));
            admitted += n.trim().parse::<u64>().unwrap();
        }
        assert_eq!(admitted, LIMIT, "round {round}");
    }
}

#[test]
fn the_server_clock_is_redis_time() {
    let server = RedisServer::start();
    let store = connect(&server.url());
    let l = Limiter::builder(Strategy::fixed_window(5, 60_000).unwrap()).store(store).server_clock(true).build();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let before = throttlekit::Clock::now_ms(&throttlekit::SystemClock);
    let d = rt.block_on(l.check("k", 1)).unwrap();
    // The window ends on the next minute boundary of Redis's clock (the same host's clock here).
    assert!(d.allowed);
    assert_eq!(d.reset_at % 60_000, 0);
    assert!(d.reset_at > before && d.reset_at <= before + 60_000 + 1000, "{d:?} vs {before}");
    // An explicit clock at 0 is not the server-clock sentinel.
    let zero = rt.block_on(l.check_at("z", 1, Now::At(0))).unwrap();
    assert_eq!(zero.reset_at, 60_000);
}

/// The sync path keeps a server clock too: a limiter, a multi limiter and a shaper whose own
/// clock reads 0 (1970) decide on Redis's `TIME` when `server_clock` is on, and at 0 when off.
#[test]
fn the_sync_path_decides_on_the_server_clock_when_asked() {
    use throttlekit::{LeakyBucketOptions, ManualClock, Shaper};
    let server = RedisServer::start();
    let store = connect(&server.url());
    let before = throttlekit::Clock::now_ms(&throttlekit::SystemClock);
    let epoch = Arc::new(ManualClock::new(0));
    let window = || Strategy::fixed_window(5, 60_000).unwrap();
    for server_clock in [true, false] {
        let tag = if server_clock { "server" } else { "caller" };
        let l = Limiter::builder(window())
            .store(store.clone())
            .clock(epoch.clone())
            .prefix(tag)
            .server_clock(server_clock)
            .build();
        let multi = MultiLimiter::new(Rule::All, vec![Dimension::new("user", window())])
            .unwrap()
            .with_store(store.clone())
            .with_clock(epoch.clone())
            .with_prefix(tag)
            .with_server_clock(server_clock);
        let single = l.check_sync("k", 1).unwrap().reset_at;
        let dims = multi.check_sync(&["k"], 1).unwrap().dimensions[0].reset_at;
        if server_clock {
            for reset in [single, dims] {
                assert!(reset > before && reset <= before + 61_000 && reset % 60_000 == 0, "{reset} vs {before}");
            }
        } else {
            assert_eq!((single, dims), (60_000, 60_000), "the caller's clock (0) decides");
        }
    }
    // A leaky bucket at 1/s: a departure reserved at 0 makes the next wait 1 s at 0, and none
    // on Redis's clock, 56 years later.
    let shaper = |server_clock| {
        Shaper::new(&LeakyBucketOptions { rate_per_sec: 1.0, max_queue_ms: 10_000.0 })
            .unwrap()
            .with_store(store.clone())
            .with_clock(epoch.clone())
            .with_server_clock(server_clock)
    };
    assert_eq!(shaper(false).reserve_sync("q", 1).unwrap().delay_ms, 0);
    assert_eq!(shaper(false).reserve_sync("q2", 1).unwrap().delay_ms, 0);
    assert_eq!(shaper(false).reserve_sync("q2", 1).unwrap().delay_ms, 1000, "the caller's clock (0) decides");
    assert_eq!(shaper(true).reserve_sync("q", 1).unwrap().delay_ms, 0, "Redis's clock decides");
}

#[test]
fn the_async_methods_work_from_an_executor_that_is_not_tokio() {
    let server = RedisServer::start();
    let store =
        block_on(RedisStore::connect(RedisOptions { urls: vec![server.url()], ..RedisOptions::default() })).unwrap();
    let l = limiter(Arc::new(store));
    let d = block_on(l.check_at("foreign", 1, Now::At(NOW))).unwrap();
    assert!(d.allowed);
    assert_eq!(d.remaining, LIMIT as i64 - 1);
    block_on(l.reset("foreign")).unwrap();
    assert_eq!(block_on(l.peek_at("foreign", Now::At(NOW))).unwrap().remaining, LIMIT as i64);
}

#[test]
fn sync_calls_from_inside_another_runtime_block_without_panicking() {
    let server = RedisServer::start();
    let l = Arc::new(limiter(connect(&server.url())));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let d = rt.block_on(async { l.check_sync_at("inside", 1, NOW) }).unwrap();
    assert!(d.allowed);
    // Dropping the store inside a runtime does not panic either.
    rt.block_on(async move { drop(l) });
}
