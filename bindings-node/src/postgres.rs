//! [`PostgresStore`]: core's Postgres store (docs/postgres.md), every decision one SQL
//! statement, for fleets that run Postgres and no Redis. The store drives its connections on its
//! own runtime; Promise methods await it from napi's, so the event loop never blocks on Postgres.
//! A limiter's `check`, `checkMany`, `peek` and `forecast` instead go over index.js's own
//! sockets (postgres_socket.rs, lib/postgres-socket.js).

use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi_derive::napi;
use throttlekit::FailPolicy;
use throttlekit::postgres::PostgresOptions;

use crate::convert::Options;
use crate::error::{CoreResult, Settled};
use crate::postgres_socket::{Socket, next_id};
use crate::store::{Chosen, fail_policy_from_options};

/// Options of `PostgresStore.connect()`: core's `PostgresOptions` (docs/postgres.md), durations
/// in ms, plus the defaults of the limiters on the store.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; `convert::Options` reads the values.
pub struct PostgresStoreOptions {
    /// `postgres://user:password@host:port/db` or libpq's key-value form; libpq's `sslmode`
    /// (`prefer`, the default, and `require` encrypt without verifying; `verify-ca` and
    /// `verify-full` check against `sslrootcert=FILE` or the system's roots). Required.
    pub url: String,
    /// The table holding the limits: `name` or `schema.name` (default `'throttlekit'`).
    pub table: Option<String>,
    /// Create the table and its functions when missing (default true). Off: a missing or
    /// misshapen table rejects with `config_invalid`.
    pub migrate: Option<bool>,
    /// Create the table `UNLOGGED`: faster writes; a server crash empties it.
    pub unlogged: Option<bool>,
    /// `synchronous_commit = off` on the store's connections: a crash can lose the last few
    /// hundred ms of charges.
    pub synchronous_commit_off: Option<bool>,
    /// Connections kept, each pipelining any number of calls (1–1024, default 4).
    pub pool_size: Option<f64>,
    /// Longest wait for any one call, in ms (default 1000); past it `store_unavailable` and the
    /// fail policy decides. A call that timed out is never resent (it may have committed).
    pub timeout_ms: Option<f64>,
    /// Longest wait for connecting, in ms (default 3000).
    pub connect_timeout_ms: Option<f64>,
    /// How often the sweeper deletes expired rows, in ms (default 60000; 0: never).
    pub sweep_interval_ms: Option<f64>,
    /// Rows one sweep deletes at most (default 1000).
    pub sweep_batch: Option<f64>,
    /// How long past its deadline a row stays before the sweeper may delete it, in ms (default 60000).
    pub sweep_grace_ms: Option<f64>,
    /// Default `serverClock` of limiters on this store: read Postgres's `clock_timestamp()`.
    pub server_clock: Option<bool>,
    /// Default `failPolicy` of limiters on this store.
    #[napi(ts_type = "FailPolicy")]
    pub fail_policy: Option<String>,
}

/// A store on Postgres, shared by every limiter given it (a pool of pipelined connections).
#[napi]
pub struct PostgresStore {
    inner: Arc<throttlekit::postgres::PostgresStore>,
    /// Where index.js's own sockets connect (lib/postgres-socket.js), `None` when they do not
    /// (a URL of several hosts).
    socket: Option<Arc<Socket>>,
    server_clock: Option<bool>,
    fail_policy: Option<FailPolicy>,
}

struct Parsed {
    options: PostgresOptions,
    server_clock: Option<bool>,
    fail_policy: Option<FailPolicy>,
}

/// `PostgresStore.connect()`'s options that are core's `PostgresOptions` (all but `url` and the
/// limiters' defaults).
const OPTIONS: &[&str] = &[
    "table",
    "migrate",
    "unlogged",
    "synchronousCommitOff",
    "poolSize",
    "timeoutMs",
    "connectTimeoutMs",
    "sweepIntervalMs",
    "sweepBatch",
    "sweepGraceMs",
];

/// `PostgresStore.connect()`'s options: types checked here, the mapping and values core's.
fn parse(options: &Unknown) -> CoreResult<Parsed> {
    let allowed: Vec<&str> = ["url"].iter().chain(OPTIONS).chain(&["serverClock", "failPolicy"]).copied().collect();
    let o = Options::read(options, "postgresStore", &allowed, false)?;
    let url = crate::convert::string(o.require("url")?, &o.path("url"))?;
    let p = PostgresOptions::from_pairs(url, o.sql_pairs(OPTIONS, PostgresOptions::kind)?)?;
    Ok(Parsed { options: p, server_clock: o.boolean("serverClock")?, fail_policy: fail_policy_from_options(&o)? })
}

impl PostgresStore {
    /// The store's number among index.js's socket pools (0: none).
    pub(crate) fn id(&self) -> u32 {
        self.socket.as_ref().map_or(0, |s| s.id)
    }

    /// The route of a limiter's Promise calls on index.js's sockets.
    pub(crate) fn socket(&self) -> Option<Arc<Socket>> {
        self.socket.clone()
    }

    /// The store and its limiter defaults, for `store::from_options`.
    pub(crate) fn chosen(&self) -> Chosen {
        Chosen {
            store: self.inner.clone(),
            redis: None,
            server_clock: self.server_clock,
            fail_policy: self.fail_policy,
        }
    }
}

#[napi]
impl PostgresStore {
    /// Connects the pool (within `connectTimeoutMs` + `timeoutMs`), creating the table when
    /// `migrate`. Rejects with `store_unavailable` when Postgres cannot be reached or refuses
    /// the login, `config_invalid` for bad options or a missing table with `migrate: false`.
    #[napi(ts_args_type = "options: PostgresStoreOptions", ts_return_type = "Promise<PostgresStore>")]
    pub fn connect<'e>(env: &'e Env, options: Unknown) -> napi::Result<PromiseRaw<'e, Settled<PostgresStore>>> {
        let parsed = parse(&options);
        env.spawn_future(async move {
            let result = match parsed {
                // On a blocking-pool thread: the store owns a runtime, which tokio forbids
                // dropping in an async context (a failed connect drops it).
                Ok(p) => tokio::task::spawn_blocking(move || {
                    let inner = Arc::new(throttlekit::postgres::PostgresStore::connect_blocking(p.options)?);
                    let socket = Socket::of(next_id(), &inner)?;
                    Ok(PostgresStore { inner, socket, server_clock: p.server_clock, fail_policy: p.fail_policy })
                })
                .await
                .unwrap_or_else(|e| Err(throttlekit::Error::store(format!("connecting failed: {e}")))),
                Err(e) => Err(e),
            };
            Ok(Settled(result))
        })
    }

    /// The table holding the limits.
    #[napi(getter)]
    pub fn table(&self) -> String {
        self.inner.options().table.clone()
    }

    /// The connections kept.
    #[napi(getter)]
    pub fn pool_size(&self) -> u32 {
        u32::try_from(self.inner.options().pool_size).unwrap_or(u32::MAX)
    }

    /// The call timeout, ms.
    #[napi(getter)]
    pub fn timeout_ms(&self) -> f64 {
        self.inner.options().timeout.as_millis() as f64
    }

    /// Closes the connections; later calls fail with `store_unavailable`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'e>(&self, env: &'e Env) -> napi::Result<PromiseRaw<'e, Settled<()>>> {
        let inner = self.inner.clone();
        env.spawn_future(async move {
            use throttlekit::Store;
            Ok(Settled(inner.close().await))
        })
    }
}
