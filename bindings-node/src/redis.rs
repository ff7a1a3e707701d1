//! [`RedisStore`]: the core's Redis store — every decision one atomic Lua script, one round
//! trip — for limiters shared by a fleet. The Promise methods of limiters, multi limiters and
//! shapers travel on index.js's own socket for the store (transport.rs); the rest (sync methods,
//! deterministic replay) on the store's connections, driven on napi's Tokio runtime (bound to the
//! store). Either way the event loop never blocks on Redis (use the Promise methods).

use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi_derive::napi;
use throttlekit::FailPolicy;
use throttlekit::redis::RedisOptions;

use crate::convert::Options;
use crate::error::{CoreResult, Settled, config};
use crate::store::{Chosen, fail_policy_from_options};

/// Options of `RedisStore.connect()`.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; `convert::Options` reads the values.
pub struct RedisStoreOptions {
    /// `redis://host:port/db` (also `rediss://`, `redis+unix://`).
    pub url: String,
    /// Longest wait for any one call, connecting included, in ms (integer >= 1, default 1000);
    /// past it the call fails with `store_unavailable` and the limiter's fail policy decides.
    pub timeout_ms: Option<f64>,
    /// Expire keys on the limiter's clock instead of Redis's: for conformance replay with a
    /// `ManualClock` (serialises calls; not for production).
    pub deterministic_replay: Option<bool>,
    /// Default `serverClock` of limiters on this store: read Redis's `TIME` instead of this
    /// process's clock (for fleets whose clocks disagree).
    pub server_clock: Option<bool>,
    /// Default `failPolicy` of limiters on this store.
    #[napi(ts_type = "FailPolicy")]
    pub fail_policy: Option<String>,
}

/// A store on Redis, shared by every limiter given it (one multiplexed connection).
#[napi]
pub struct RedisStore {
    inner: Arc<throttlekit::redis::RedisStore>,
    /// Names this store to index.js, which keeps one socket per store (transport.rs).
    id: u32,
    server_clock: Option<bool>,
    fail_policy: Option<FailPolicy>,
}

struct Parsed {
    options: RedisOptions,
    server_clock: Option<bool>,
    fail_policy: Option<FailPolicy>,
}

fn parse(options: &Unknown) -> CoreResult<Parsed> {
    let o = Options::read(
        options,
        "redisStore",
        &["url", "timeoutMs", "deterministicReplay", "serverClock", "failPolicy"],
        false,
    )?;
    let mut r = RedisOptions {
        urls: vec![o.string("url")?.ok_or_else(|| config(&o.path("url"), "is required"))?],
        ..RedisOptions::default()
    };
    if let Some(ms) = o.number("timeoutMs")? {
        r.timeout_ms = throttlekit::validate::integer_at_least(&o.path("timeoutMs"), ms, 1.0)? as u64;
    }
    if let Some(on) = o.boolean("deterministicReplay")? {
        r.deterministic_replay = on;
    }
    Ok(Parsed { options: r, server_clock: o.boolean("serverClock")?, fail_policy: fail_policy_from_options(&o)? })
}

impl RedisStore {
    /// The store and its limiter defaults, for `store::from_options`.
    pub(crate) fn chosen(&self) -> Chosen {
        let own_transport = !self.inner.options().deterministic_replay;
        Chosen {
            store: self.inner.clone(),
            redis: own_transport.then(|| crate::transport::RedisRef { id: self.id, store: self.inner.clone() }),
            server_clock: self.server_clock,
            fail_policy: self.fail_policy,
        }
    }
}

#[napi]
impl RedisStore {
    /// Connects (within `timeoutMs`). Rejects with `store_unavailable` when Redis cannot be
    /// reached, `config_invalid` for bad options.
    #[napi(ts_args_type = "options: RedisStoreOptions", ts_return_type = "Promise<RedisStore>")]
    pub fn connect<'e>(env: &'e Env, options: Unknown) -> napi::Result<PromiseRaw<'e, Settled<RedisStore>>> {
        let parsed = parse(&options);
        env.spawn_future(async move {
            let result = match parsed {
                // `connect_blocking` on a blocking-pool thread rather than the async `connect`:
                // when connecting fails, the core drops the store's fresh runtime inside
                // `connect`, which tokio forbids in an async context (it panics).
                Ok(p) => tokio::task::spawn_blocking(move || {
                    throttlekit::redis::RedisStore::connect_blocking(p.options).map(|store| RedisStore {
                        inner: Arc::new(store),
                        id: crate::transport::next_id(),
                        server_clock: p.server_clock,
                        fail_policy: p.fail_policy,
                    })
                })
                .await
                .unwrap_or_else(|e| Err(throttlekit::Error::store(format!("connecting failed: {e}"))))
                .inspect(|store| {
                    // Back on napi's runtime (built with IO and timers, `lib.rs`), which polls
                    // every Promise method's future: give it a connection driven on it, so a
                    // check no longer crosses to the store's own runtime and back. Best effort:
                    // the store's own connections serve until (and unless) it is up.
                    let _ = store.inner.bind_current_runtime();
                }),
                Err(e) => Err(e),
            };
            Ok(Settled(result))
        })
    }

    /// The number index.js knows this store's socket by (transport.rs).
    #[cfg_attr(test, allow(dead_code))] // Read by transport.rs's exports only (see there).
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// The URL it was connected with.
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.inner.options().urls.join(",")
    }

    /// The call timeout, ms.
    #[napi(getter)]
    pub fn timeout_ms(&self) -> f64 {
        self.inner.options().timeout_ms as f64
    }

    /// Whether keys expire on the limiter's clock (conformance replay).
    #[napi(getter)]
    pub fn deterministic_replay(&self) -> bool {
        self.inner.options().deterministic_replay
    }

    /// Closes the connection; later calls fail with `store_unavailable`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'e>(&self, env: &'e Env) -> napi::Result<PromiseRaw<'e, Settled<()>>> {
        let inner = self.inner.clone();
        env.spawn_future(async move {
            use throttlekit::Store;
            Ok(Settled(inner.close().await))
        })
    }
}
