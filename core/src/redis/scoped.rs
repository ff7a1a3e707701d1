//! Fresh, isolated stores on one Redis for the conformance runner: each suite gets its own key
//! namespace (`store::scoped`), and the keys a suite wrote are deleted when the next one starts
//! and when it is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::Clock;
use crate::error::Result;
use crate::redis::{RedisOptions, RedisStore};
use crate::store::Store;
use crate::store::scoped::{ClearNamespace, ScopedStore};

impl ClearNamespace for RedisStore {
    /// Deletes every key written since the last clear (deterministic replay records them).
    fn clear_namespace(&self, _ns: &str) {
        let _ = self.clear_replayed_blocking();
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
        Ok(Arc::new(ScopedStore::new(store.clone(), format!("{run}:{n}"))) as Arc<dyn Store>)
    })
}
