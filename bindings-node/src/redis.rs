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

use crate::convert::{self, Options};
use crate::error::{CoreResult, Settled, config};
use crate::store::{Chosen, fail_policy_from_options};

/// Options of `RedisStore.connect()`: core's connection options (`docs/redis.md`), one each,
/// plus the defaults of the limiters on the store.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; `convert::Options` reads the values.
pub struct RedisStoreOptions {
    /// One URL, `redis://[user:password@]host:port[/db]` (`rediss://` for TLS,
    /// `redis+unix:///path`): the same as `urls: [url]`. Give `url` or `urls`, not both.
    pub url: Option<String>,
    /// The URLs: one (standalone), the seed nodes of a cluster, or the sentinels; an array, or
    /// one comma-separated string.
    #[napi(ts_type = "string | string[]")]
    pub urls: Option<Vec<String>>,
    /// `'standalone'` (default: one server), `'cluster'` (the URLs are seed nodes) or
    /// `'sentinel'` (the URLs are sentinels, `serviceName` the master they follow).
    #[napi(ts_type = "'standalone' | 'cluster' | 'sentinel'")]
    pub mode: Option<String>,
    /// Sentinel mode only, and required there: the name in `sentinel monitor NAME ...`.
    pub service_name: Option<String>,
    /// PEM file of the CA certificates to trust instead of the system's roots (`rediss://`
    /// only). The certificate chain and host name are always verified.
    pub tls_ca_file: Option<String>,
    /// PEM client certificate for mutual TLS; needs `tlsKeyFile`.
    pub tls_cert_file: Option<String>,
    /// PEM private key of `tlsCertFile`.
    pub tls_key_file: Option<String>,
    /// `'auto'` (default: functions on servers that accept `FUNCTION LOAD`, else scripts),
    /// `'functions'` or `'eval'`.
    #[napi(ts_type = "'auto' | 'functions' | 'eval'")]
    pub scripting: Option<String>,
    /// Longest wait for any one call, connecting included, in ms (integer >= 1, default 1000);
    /// past it the call fails with `store_unavailable` and the limiter's fail policy decides.
    pub timeout_ms: Option<f64>,
    /// Expire keys on the limiter's clock instead of Redis's: for conformance replay with a
    /// `ManualClock` (serialises calls; not for production).
    pub deterministic_replay: Option<bool>,
    /// Make each charge durable before admitting it: this many replicas (integer 0–64, default
    /// 0: off) must acknowledge the call's writes within `durableTimeoutMs`, else the call
    /// fails with `store_unavailable` and the fail policy decides (`docs/redis.md`).
    pub durable_replicas: Option<f64>,
    /// How long the server waits for those replicas, in ms (integer >= 1 and < `timeoutMs`,
    /// default 100).
    pub durable_timeout_ms: Option<f64>,
    /// Sentinel mode: the password the sentinels themselves require (`requirepass` in
    /// sentinel.conf); the URLs' credentials stay the master's.
    pub sentinel_password: Option<String>,
    /// Sentinel mode: the sentinels' ACL user for `sentinelPassword`.
    pub sentinel_username: Option<String>,
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

/// The one place `RedisStore.connect()`'s options become core's `RedisOptions`: same names in
/// camelCase, types checked here, every value and combination checked by core.
fn parse(options: &Unknown) -> CoreResult<Parsed> {
    use throttlekit::redis::{RedisMode, Scripting, split_urls};
    let o = Options::read(
        options,
        "redisStore",
        &[
            "url",
            "urls",
            "mode",
            "serviceName",
            "tlsCaFile",
            "tlsCertFile",
            "tlsKeyFile",
            "scripting",
            "timeoutMs",
            "deterministicReplay",
            "durableReplicas",
            "durableTimeoutMs",
            "sentinelPassword",
            "sentinelUsername",
            "serverClock",
            "failPolicy",
        ],
        false,
    )?;
    let urls = match (o.string("url")?, o.get("urls")) {
        (Some(url), None) => vec![url],
        (None, Some(v)) if convert::type_of(v) == napi::sys::ValueType::napi_string => {
            split_urls(&convert::string(v, &o.path("urls"))?)
        }
        (None, Some(v)) => convert::strings(v, &o.path("urls"))?,
        (Some(_), Some(_)) => return Err(config(&o.path("urls"), "and url are the same option: give one")),
        (None, None) => return Err(config(&o.path("urls"), "is required (or url)")),
    };
    let mut r = RedisOptions { urls, ..RedisOptions::default() };
    if let Some(m) = o.string("mode")? {
        r.mode = RedisMode::parse(&m)?;
    }
    r.service_name = o.string("serviceName")?;
    r.tls_ca_file = o.string("tlsCaFile")?.map(Into::into);
    r.tls_cert_file = o.string("tlsCertFile")?.map(Into::into);
    r.tls_key_file = o.string("tlsKeyFile")?.map(Into::into);
    if let Some(s) = o.string("scripting")? {
        r.scripting = Scripting::parse(&s)?;
    }
    if let Some(ms) = o.number("timeoutMs")? {
        r.timeout_ms = throttlekit::validate::integer_at_least(&o.path("timeoutMs"), ms, 1.0)? as u64;
    }
    if let Some(on) = o.boolean("deterministicReplay")? {
        r.deterministic_replay = on;
    }
    if let Some(n) = o.number("durableReplicas")? {
        // Saturates past u32: core's "at most 64" is then the message.
        r.durable_replicas = throttlekit::validate::integer_at_least(&o.path("durableReplicas"), n, 0.0)? as u32;
    }
    if let Some(ms) = o.number("durableTimeoutMs")? {
        r.durable_timeout_ms = throttlekit::validate::integer_at_least(&o.path("durableTimeoutMs"), ms, 0.0)? as u64;
    }
    r.sentinel_password = o.string("sentinelPassword")?;
    r.sentinel_username = o.string("sentinelUsername")?;
    Ok(Parsed { options: r, server_clock: o.boolean("serverClock")?, fail_policy: fail_policy_from_options(&o)? })
}

impl RedisStore {
    /// The store and its limiter defaults, for `store::from_options`.
    pub(crate) fn chosen(&self) -> Chosen {
        // index.js's sockets talk in plaintext, with EVALSHA or FCALL: a standalone server or
        // a cluster. Sentinel routes every call to wherever its master is now, TLS
        // is verified by the core's rustls (the same roots, CA file and client certificate in
        // every language), `scripting: 'functions'` asks for FCALL (an ACL may allow only
        // that), and durable charges need core's `WAIT` after each call, so those stores keep
        // their calls on the core's connections.
        // A cluster's calls go there too: the core names each call's master and reads each
        // redirect (`throttlekit::redis::routed`, cluster.rs); index.js keeps a socket per master.
        let options = self.inner.options();
        let routes = self.inner.routes();
        let own_transport = !options.deterministic_replay
            && options.durable_replicas == 0
            && options.scripting != throttlekit::redis::Scripting::Functions
            && (!self.inner.is_routed() || routes.is_some())
            && !self.inner.endpoint().tls
            && !options.urls.iter().any(|u| u.starts_with("rediss:"));
        Chosen {
            store: self.inner.clone(),
            redis: own_transport.then(|| crate::transport::RedisRef { id: self.id, store: self.inner.clone(), routes }),
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

    /// `'standalone'`, `'cluster'` or `'sentinel'`.
    #[napi(getter, ts_return_type = "'standalone' | 'cluster' | 'sentinel'")]
    pub fn mode(&self) -> &'static str {
        self.inner.options().mode.as_str()
    }

    /// Whether the Promise methods of limiters on this store write on the event loop's own
    /// sockets (standalone or cluster, plaintext, scripting auto or eval, not deterministic
    /// replay; on a cluster one socket per master, each call routed by the core) rather than on
    /// the core's connections (Sentinel, TLS, `scripting: 'functions'`, durable charges).
    #[napi(getter)]
    pub fn event_loop_transport(&self) -> bool {
        self.chosen().redis.is_some()
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
