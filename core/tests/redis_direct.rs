//! The async path on the store's shared connection: a call awaited inside a tokio runtime (or any
//! executor) runs on the caller's task, routed to the one node's connection, whose driver lives
//! on the store's runtime. Every store here has automatic binding off (`bind_runtimes(false)`),
//! or a tokio runtime's calls would move to a connection of its own (`redis_bound.rs`) and leave
//! this path untested. It keeps every guarantee: bounded by the timeout, EVAL only after
//! NOSCRIPT, a timed-out call never sent again, reconnection after a restart, no panic on drop.
#![cfg(feature = "redis")]

#[path = "support/executor.rs"]
mod executor;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/redis_store.rs"]
mod redis_store;

use executor::block_on;

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use redis_store::times_out_while_stopped;
use throttlekit::redis::RedisStore;
use throttlekit::{ErrorCode, FailPolicy, Limiter, Strategy};

const TIMEOUT_MS: u64 = 300;

/// A store whose calls from tokio runtimes stay on its direct connection.
fn connect(url: String, timeout_ms: u64) -> Arc<RedisStore> {
    let store = redis_store::connect(url, timeout_ms);
    store.bind_runtimes(false);
    store
}

fn limiter(store: &Arc<RedisStore>) -> Limiter {
    Limiter::builder(Strategy::gcra(1_000_000, 1000, None).unwrap())
        .store(store.clone())
        .fail_policy(FailPolicy::Raise)
        .prefix("direct")
        .build()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn async_calls_to_a_stopped_server_time_out_inside_a_runtime_then_recover() {
    let server = RedisServer::start();
    let store = connect(server.url(), TIMEOUT_MS);
    let l = limiter(&store);
    let rt = current_thread();
    rt.block_on(async {
        l.check("k", 1).await.unwrap();
        times_out_while_stopped(&server, TIMEOUT_MS, || l.check("k", 1)).await;
    });
    // A runtime without a timer works too: the timeout runs on the store's timer.
    let no_timer = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert!(no_timer.block_on(l.check("k", 1)).unwrap().allowed);
    server.signal("STOP");
    let err = no_timer.block_on(l.check("k", 1)).unwrap_err();
    assert!(err.message().contains("timed out"), "{err}");
    server.signal("CONT");
}

#[test]
fn a_script_flush_is_answered_with_eval_on_the_direct_path() {
    let server = RedisServer::start();
    let store = connect(server.url(), TIMEOUT_MS);
    let l = Limiter::builder(Strategy::fixed_window(1000, 3_600_000).unwrap()).store(store.clone()).build();
    let now = 1_800_000_000_000;
    current_thread().block_on(async {
        for i in 0..500 {
            if i % 50 == 25 {
                redis_server::raw_command(server.port, "SCRIPT FLUSH").unwrap();
            }
            l.check_at("flush", 1, throttlekit::store::Now::At(now)).await.unwrap_or_else(|e| panic!("call {i}: {e}"));
        }
    });
    // Each call counted exactly once: NOSCRIPT runs nothing, the EVAL runs once.
    assert_eq!(l.peek_sync_at("flush", now).unwrap().remaining, 1000 - 500);
}

#[test]
fn a_timed_out_async_call_is_not_sent_again() {
    let server = RedisServer::start();
    let store = connect(server.url(), TIMEOUT_MS);
    let l = Limiter::builder(Strategy::fixed_window(1000, 3_600_000).unwrap()).store(store.clone()).build();
    let now = 1_800_000_000_000;
    let rt = current_thread();
    rt.block_on(l.check_at("once", 1, throttlekit::store::Now::At(now))).unwrap();
    let port = server.port;
    let sleeper = redis_server::block_server(port, 1);
    let err = rt.block_on(l.check_at("once", 1, throttlekit::store::Now::At(now))).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StoreUnavailable);
    let _ = sleeper.join();
    std::thread::sleep(Duration::from_millis(100));
    // The late reply was discarded, and the connection still serves the next call.
    let d = rt.block_on(l.peek_at("once", throttlekit::store::Now::At(now))).unwrap();
    assert_eq!(d.remaining, 1000 - 2);
}

#[test]
fn async_calls_reconnect_after_a_restart_from_any_executor() {
    let mut server = RedisServer::start();
    let port = server.port;
    let store = connect(server.url(), TIMEOUT_MS);
    let l = limiter(&store);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(l.check("k", 1)).unwrap();
    server.stop();
    for _ in 0..3 {
        let start = Instant::now();
        let err = rt.block_on(l.check("k", 1)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::StoreUnavailable, "{err}");
        assert!(start.elapsed() < Duration::from_millis(TIMEOUT_MS * 3 + 500));
    }
    let server = RedisServer::start_on(port);
    let recovered = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        rt.block_on(l.check("after", 1)).is_ok()
    });
    assert!(recovered, "the store did not reconnect after the restart");
    // Direct again: many calls from a runtime and from an executor that is not tokio.
    rt.block_on(async {
        for _ in 0..200 {
            l.check("after", 1).await.unwrap();
        }
    });
    for _ in 0..200 {
        block_on(l.check("after", 1)).unwrap();
    }
    drop(server);
}

#[test]
fn dropping_the_store_inside_a_runtime_does_not_panic() {
    let server = RedisServer::start();
    current_thread().block_on(async {
        let store = connect(server.url(), TIMEOUT_MS);
        let l = limiter(&store);
        l.check("k", 1).await.unwrap();
        drop(l);
        drop(store);
    });
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap().block_on(async {
        let store = RedisStore::connect(redis_store::options(server.url(), 1_000)).await.unwrap();
        let store = Arc::new(store);
        store.bind_runtimes(false);
        limiter(&store).check("k", 1).await.unwrap();
        tokio::spawn(async move { drop(store) }).await.unwrap();
    });
}

#[test]
fn a_key_longer_than_the_rule_is_refused_before_it_reaches_redis() {
    // The memory store's 256-byte rule, on Redis too: config_invalid, and nothing sent.
    let server = RedisServer::start();
    let store = connect(server.url(), TIMEOUT_MS);
    let l = limiter(&store);
    // "direct:" + 249 bytes is exactly 256: accepted; one byte more is refused on every path.
    assert!(l.check_sync(&"k".repeat(249), 1).unwrap().allowed);
    let long = "k".repeat(250);
    let rt = current_thread();
    for err in [
        l.check_sync(&long, 1).unwrap_err(),
        rt.block_on(l.check(&long, 1)).unwrap_err(),
        rt.block_on(l.peek(&long)).unwrap_err(),
        rt.block_on(l.reset(&long)).unwrap_err(),
    ] {
        assert_eq!(err.code(), ErrorCode::ConfigInvalid, "{err}");
        assert!(err.message().contains("at most 256 bytes"), "{err}");
    }
    let calls: u64 = ["evalsha", "eval", "fcall"].iter().map(|c| redis_server::calls(server.port, c)).sum();
    assert_eq!(calls, 1, "only the accepted key reached the server");
}
