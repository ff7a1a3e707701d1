//! Fresh stores for conformance replays on one Postgres table: every suite's keys under a
//! namespace of its own (`<run>:<n>:`, `store::scoped`), its rows deleted when the suite's store
//! is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{PostgresOptions, PostgresStore};
use crate::clock::Clock;
use crate::error::Result;
use crate::store::Store;
use crate::store::scoped::{ClearNamespace, ScopedStore};

impl ClearNamespace for PostgresStore {
    /// Deletes the namespace's rows.
    fn clear_namespace(&self, ns: &str) {
        let _ = self.delete_prefix_blocking(&format!("{ns}:"));
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
        Ok(Arc::new(ScopedStore::new(store.clone(), format!("{run}:{n}"))) as Arc<dyn Store>)
    })
}
