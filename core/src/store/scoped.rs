//! A shared store seen through a key namespace: `ns:key` for every key it is handed. The
//! conformance runners replay each suite on one of these over one Redis or Postgres store, so a
//! runner pointed at a shared server never reads or deletes anyone else's keys, and what a suite
//! wrote goes when its view is dropped.

use std::sync::Arc;

use crate::error::Result;
use crate::store::{BoxFuture, DimensionCall, MultiReply, Now, Reply, Rule, Store, Transform};

/// A store that can forget what one namespace wrote (best effort: it runs on drop).
pub trait ClearNamespace: Store {
    /// Deletes what was written under `ns` (the view's namespace, without its `:`).
    fn clear_namespace(&self, ns: &str);
}

/// `store` seen through the namespace `ns`.
pub struct ScopedStore<S: ClearNamespace> {
    store: Arc<S>,
    ns: String,
}

impl<S: ClearNamespace> ScopedStore<S> {
    /// A view of `store` whose every key is `ns:key`.
    pub fn new(store: Arc<S>, ns: String) -> ScopedStore<S> {
        ScopedStore { store, ns }
    }

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

impl<S: ClearNamespace> Drop for ScopedStore<S> {
    fn drop(&mut self) {
        self.store.clear_namespace(&self.ns);
    }
}

impl<S: ClearNamespace> Store for ScopedStore<S> {
    fn apply<'a>(&'a self, key: &'a str, now: Now, transform: Transform<'a>) -> BoxFuture<'a, Result<Reply>> {
        let key = self.key(key);
        Box::pin(async move { self.store.apply(&key, now, transform).await })
    }

    fn apply_sync(&self, key: &str, now: Now, transform: Transform<'_>) -> Result<Reply> {
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

    fn apply_multi_sync(&self, rule: Rule, dims: &[DimensionCall<'_>], now: Now) -> Result<MultiReply> {
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
