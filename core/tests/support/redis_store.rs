//! A `RedisStore` on one test server (a `RedisServer`, or a fault proxy in front of one): the
//! suites that need a plain store connect it here, so what "a plain store" means (one URL, a
//! timeout per call, every other option at its default) is written once; and what the suites
//! of the store's paths (blocking, direct, bound) check alike: a bound runtime coming up, and
//! calls to a stopped server timing out, then answering once it resumes.
//!
//! Include it with `#[path = "support/redis_store.rs"] mod redis_store;`, beside
//! `support/redis_server.rs` as `mod redis_server`.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use throttlekit::ErrorCode;
use throttlekit::redis::{RedisOptions, RedisStore};

use super::redis_server::RedisServer;

/// The options of a store on the one server at `url`, each call bounded by `timeout_ms`.
pub fn options(url: String, timeout_ms: u64) -> RedisOptions {
    RedisOptions { urls: vec![url], timeout_ms, ..RedisOptions::default() }
}

/// Connects a store with `options`, blocking; a server that does not answer fails the test here.
pub fn connect_with(options: RedisOptions) -> Arc<RedisStore> {
    Arc::new(RedisStore::connect_blocking(options).expect("connect"))
}

/// A store on the one server at `url`, each call bounded by `timeout_ms`.
pub fn connect(url: String, timeout_ms: u64) -> Arc<RedisStore> {
    connect_with(options(url, timeout_ms))
}

/// Binds the current runtime to `store` (`RedisStore::bind_current_runtime`) and waits until its
/// own connection is up (5 s at most).
pub async fn bind(store: &RedisStore) {
    store.bind_current_runtime().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !store.bound_connection_ready() {
        assert!(Instant::now() < deadline, "the bound connection never came up");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Stops `server` (SIGSTOP): each of three `call`s must fail as timed out, no sooner than
/// `timeout_ms` and well within three times it. Then resumes it (SIGCONT): a call must answer
/// again within a second.
pub async fn times_out_while_stopped<F, Fut>(server: &RedisServer, timeout_ms: u64, call: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = throttlekit::Result<throttlekit::Decision>>,
{
    server.signal("STOP");
    for _ in 0..3 {
        let start = Instant::now();
        let err = call().await.unwrap_err();
        let took = start.elapsed();
        assert_eq!(err.code(), ErrorCode::StoreUnavailable);
        assert!(err.message().contains("timed out"), "{err}");
        assert!(took >= Duration::from_millis(timeout_ms - 20), "gave up early: {took:?}");
        assert!(took < Duration::from_millis(timeout_ms * 3 + 500), "took {took:?}");
    }
    server.signal("CONT");
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if call().await.is_ok() {
            return;
        }
    }
    panic!("no answer after SIGCONT");
}
