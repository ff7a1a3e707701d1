//! Fresh stores for conformance replays on one Postgres table: every suite's keys under a
//! namespace of its own (`<run>:<n>:`), its rows deleted when the suite's store is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{PostgresOptions, PostgresStore};
use crate::clock::Clock;
use crate::error::Result;
use crate::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Rule, Store, Transform};

/// One suite's view of the shared store.
pub struct ScopedStore {
    store: Arc<PostgresStore>,
    ns: String,
}

impl ScopedStore {
    fn key(&self, key: &str) -> String {
        format!("{}:{key}", self.ns)
    }

    fn keys(&self, dims: &[DimensionCall<'_>]) -> Vec<String> {
        dims.iter().map(|d| self.key(d.key)).collect()
    }
}

fn scoped<'a>(dims: &[DimensionCall<'a>], keys: &'a [String]) -> Vec<DimensionCall<'a>> {
    dims.iter().zip(keys).map(|(d, k)| DimensionCall { key: k, ..*d }).collect()
}

impl Drop for ScopedStore {
    fn drop(&mut self) {
        let _ = self.store.delete_prefix_blocking(&format!("{}:", self.ns));
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
            let keys = self.keys(dims);
            self.store.apply_multi(rule, &scoped(dims, &keys), now).await
        })
    }

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: i64) -> Result<MultiReply> {
        let keys = self.keys(dims);
        self.store.apply_multi_sync(rule, &scoped(dims, &keys), now)
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

/// A factory of fresh conformance stores on the Postgres at `url` (one connection pool, the
/// default table): what `throttlekit conformance --store postgres` replays on.
pub fn conformance_stores(url: &str) -> Result<impl FnMut() -> Result<Arc<dyn Store>> + use<>> {
    let options = PostgresOptions { sweep_interval: None, ..PostgresOptions::new(url) };
    let store = Arc::new(PostgresStore::connect_blocking(options)?);
    let run = format!("throttlekit-conformance:{}-{}", std::process::id(), crate::SystemClock.now_ms());
    let counter = AtomicU64::new(0);
    Ok(move || {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        Ok(Arc::new(ScopedStore { store: store.clone(), ns: format!("{run}:{n}") }) as Arc<dyn Store>)
    })
}
