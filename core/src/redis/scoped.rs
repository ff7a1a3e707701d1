//! Fresh, isolated stores on one Redis for the conformance runner: each suite gets its own key
//! namespace (so a runner pointed at a shared Redis never reads or deletes anyone else's keys),
//! and the keys a suite wrote are deleted when the next one starts and when it is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::Clock;
use crate::error::Result;
use crate::redis::{RedisOptions, RedisStore};
use crate::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Rule, Store, Transform};

/// A [`RedisStore`] seen through a key namespace: `ns:key` for every key it is handed.
pub struct ScopedStore {
    store: Arc<RedisStore>,
    ns: String,
}

impl ScopedStore {
    fn key(&self, key: &str) -> String {
        format!("{}:{key}", self.ns)
    }
}

impl Drop for ScopedStore {
    fn drop(&mut self) {
        let _ = self.store.clear_replayed_blocking();
    }
}

impl Store for ScopedStore {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>> {
        let key = self.key(key);
        Box::pin(async move { self.store.apply(&key, now, transform).await })
    }

    fn apply_sync(&self, key: &str, now: i64, transform: Transform<'_>) -> Result<Reply> {
        self.store.apply_sync(&self.key(key), now, transform)
    }

    fn apply_multi<'a>(
        &'a self,
        rule: Rule,
        dims: &'a [DimensionCall<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<MultiReply>> {
        Box::pin(async move {
            let keys: Vec<String> = dims.iter().map(|d| self.key(d.key)).collect();
            let scoped: Vec<DimensionCall<'_>> =
                dims.iter().zip(&keys).map(|(d, k)| DimensionCall { key: k, ..*d }).collect();
            self.store.apply_multi(rule, &scoped, now).await
        })
    }

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: i64) -> Result<MultiReply> {
        let keys: Vec<String> = dims.iter().map(|d| self.key(d.key)).collect();
        let scoped: Vec<DimensionCall<'_>> =
            dims.iter().zip(&keys).map(|(d, k)| DimensionCall { key: k, ..*d }).collect();
        self.store.apply_multi_sync(rule, &scoped, now)
    }

    fn reset<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        let key = self.key(key);
        Box::pin(async move { self.store.reset(&key).await })
    }

    fn reset_sync(&self, key: &str) -> Result<()> {
        self.store.reset_sync(&self.key(key))
    }

    fn is_sync(&self) -> bool {
        true
    }
}

/// A factory of fresh deterministic-replay stores on the Redis at `url`, one connection for
/// all: what `throttlekit conformance --store redis` hands the runner.
pub fn conformance_stores(url: &str) -> Result<impl FnMut() -> Result<Arc<dyn Store>> + use<>> {
    conformance_stores_with(RedisOptions::from_urls(url))
}

/// [`conformance_stores`] reaching Redis as `options` say (a cluster, TLS, ...); deterministic
/// replay is switched on whatever `options` hold.
pub fn conformance_stores_with(options: RedisOptions) -> Result<impl FnMut() -> Result<Arc<dyn Store>> + use<>> {
    let options = RedisOptions { deterministic_replay: true, ..options };
    let store = Arc::new(RedisStore::connect_blocking(options)?);
    let run = format!("throttlekit-conformance:{}-{}", std::process::id(), crate::SystemClock.now_ms());
    let counter = AtomicU64::new(0);
    Ok(move || {
        store.clear_replayed_blocking()?;
        let n = counter.fetch_add(1, Ordering::Relaxed);
        Ok(Arc::new(ScopedStore { store: store.clone(), ns: format!("{run}:{n}") }) as Arc<dyn Store>)
    })
}
