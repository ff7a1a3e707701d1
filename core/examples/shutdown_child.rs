//! The Rust child of the shutdown-hygiene check (`tests/shutdown.sh`): uses a Redis store from
//! blocking and async calls, closes it, says `closed`, and returns from main when told to.
use std::io::BufRead;
use std::sync::Arc;

use throttlekit::redis::{RedisOptions, RedisStore};
use throttlekit::{Limiter, Strategy};

fn main() {
    let url = std::env::var("THROTTLEKIT_REDIS_URL").expect("THROTTLEKIT_REDIS_URL");
    let store = Arc::new(
        RedisStore::connect_blocking(RedisOptions { urls: vec![url], ..RedisOptions::default() }).expect("connects"),
    );
    let limiter = Limiter::builder(Strategy::gcra(100, 1000, None).expect("valid"))
        .store(store.clone())
        .prefix("shutdown")
        .build();
    for i in 0..10 {
        limiter.check_sync(&format!("k{i}"), 1).expect("a blocking check");
    }
    let mut line = String::new();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    rt.block_on(async {
        for i in 0..10 {
            limiter.check(&format!("k{i}"), 1).await.expect("an async check");
        }
        println!("working");
        std::io::stdin().lock().read_line(&mut line).expect("stdin");
        limiter.close().await.expect("closes");
    });
    drop(rt);
    // `close()` alone leaves the hop path's shared connection connected (see the report in
    // docs/hardening.md); releasing the store's last reference shuts its runtime and sockets.
    drop(limiter);
    drop(store);
    println!("closed");
    std::io::stdin().lock().read_line(&mut line).expect("stdin");
}
