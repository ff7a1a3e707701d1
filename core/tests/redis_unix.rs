//! A store on a Unix socket (`redis+unix://`): the blocking path and a bound runtime's async
//! path take the store's own connections over the socket (the same drivers, frame scanner and
//! engine as TCP, `core/src/redis/socket.rs`), decide as a store over TCP does, and keep the
//! time bound when the server stops answering.
#![cfg(all(feature = "redis", unix))]

#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/redis_store.rs"]
mod redis_store;

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use throttlekit::redis::RedisStore;
use throttlekit::{Dimension, ErrorCode, FailPolicy, Limiter, MultiLimiter, Rule, Strategy};

const TIMEOUT_MS: u64 = 300;

/// A server listening on a Unix socket in its own directory too, and a store on that socket.
fn unix_store() -> (RedisServer, Arc<RedisStore>) {
    let extra = ["--unixsocket", "{dir}/redis.sock", "--unixsocketperm", "700"].map(String::from);
    let server = RedisServer::start_with(&extra, redis_server::free_port);
    let url = format!("redis+unix://{}", server.dir().join("redis.sock").display());
    let store = redis_store::connect(url, TIMEOUT_MS);
    (server, store)
}

/// The windows are a day long: they run on the system clock (Redis expires keys on its own), and
/// a window boundary between a test's checks would start the count over; a test of a few seconds
/// meets one with a probability of about 1 in 20,000.
const DAY: u64 = 86_400_000;

fn limiter(store: &Arc<RedisStore>, prefix: &str) -> Limiter {
    Limiter::builder(Strategy::fixed_window(3, DAY).unwrap())
        .store(store.clone())
        .fail_policy(FailPolicy::Raise)
        .prefix(prefix)
        .build()
}

/// Three admitted, then denied: the window's count, read back through the socket.
fn assert_three_then_denied(allowed: Vec<bool>, path: &str) {
    assert_eq!(allowed, [true, true, true, false, false], "{path}");
}

#[test]
fn every_path_decides_over_a_unix_socket() {
    let (server, store) = unix_store();
    let sync = limiter(&store, "sync");
    assert_three_then_denied((0..5).map(|_| sync.check_sync("k", 1).unwrap().allowed).collect(), "blocking");

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let bound = limiter(&store, "bound");
    rt.block_on(async {
        // The bound runtime's connection comes up over the socket, or this fails.
        redis_store::bind(&store).await;
        let mut allowed = Vec::new();
        for _ in 0..5 {
            allowed.push(bound.check("k", 1).await.unwrap().allowed);
        }
        assert_three_then_denied(allowed, "bound async");
    });

    let multi = MultiLimiter::new(
        Rule::All,
        vec![
            Dimension::new("a", Strategy::fixed_window(3, DAY).unwrap()),
            Dimension::new("b", Strategy::fixed_window(100, DAY).unwrap()),
        ],
    )
    .unwrap()
    .with_store(store.clone());
    let allowed = (0..5).map(|_| multi.check_sync(&["k", "k"], 1).unwrap().decision.allowed).collect();
    assert_three_then_denied(allowed, "multi, blocking");
    // The counters are the server's: redis-cli over TCP sees the same window.
    let count = redis_server::cli(server.port, &["--scan", "--pattern", "sync:*"]).unwrap();
    assert_eq!(count.lines().count(), 1, "one key for the blocking path's window: {count}");
}

#[test]
fn a_call_on_a_stopped_server_times_out_over_the_socket_then_recovers() {
    let (server, store) = unix_store();
    let sync = limiter(&store, "t");
    sync.check_sync("k", 1).unwrap();
    server.signal("STOP");
    let start = Instant::now();
    let err = sync.check_sync("k", 1).unwrap_err();
    let took = start.elapsed();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable, "{err}");
    assert!(took >= Duration::from_millis(TIMEOUT_MS - 20), "gave up early: {took:?}");
    assert!(took < Duration::from_millis(TIMEOUT_MS * 3 + 500), "took {took:?}");
    server.signal("CONT");

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        redis_store::bind(&store).await;
        redis_store::times_out_while_stopped(&server, TIMEOUT_MS, || sync.check("k", 1)).await;
    });
}
