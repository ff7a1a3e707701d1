//! [`SqliteStore`]: core's SQLite store (docs/sqlite.md), the limits in one file that every
//! process of one machine opening it shares. SQLite runs in this process: opening is a local
//! file operation, so `SqliteStore.open()` is synchronous; every decision is one short
//! transaction that core runs where the call runs (the Promise methods' and the sync methods'
//! alike).

use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi_derive::napi;
use throttlekit::FailPolicy;
use throttlekit::store::sqlite::SqliteOptions;

use crate::convert::Options;
use crate::error::{CoreResult, OrThrow, Settled};
use crate::store::{Chosen, fail_policy_from_options};

/// Options of `SqliteStore.open()`: core's `SqliteOptions` (docs/sqlite.md), plus the default
/// fail policy of the limiters on the store.
#[napi(object, object_to_js = false)]
#[allow(dead_code)] // Declares the TypeScript shape; `convert::Options` reads the values.
pub struct SqliteStoreOptions {
    /// The database file, created if missing (its directory must exist). Required.
    pub path: String,
    /// The table holding the limits (default `'throttlekit'`): a letter or `_`, then letters,
    /// digits or `_`. Several tables may share a file.
    pub table: Option<String>,
    /// How long a call waits for another process's write lock before `store_unavailable` (and
    /// the fail policy), in ms (default 5000).
    pub busy_timeout_ms: Option<f64>,
    /// `'normal'` (default: a commit survives the process crashing) or `'full'` (and a power
    /// loss; each decision waits for the disk).
    #[napi(ts_type = "'normal' | 'full'")]
    pub synchronous: Option<String>,
    /// Create the table when missing (default true). Off: a missing table is `config_invalid`.
    pub migrate: Option<bool>,
    /// Refuse full keys (`prefix:key`) longer than this many bytes with `config_invalid`
    /// (default 256).
    pub max_key_length: Option<f64>,
    /// Sweep rows long expired every 1024 decisions (default true). Off: an expired row goes
    /// only when its key is next touched, so expiry follows nothing but the callers' clock
    /// (conformance replays).
    pub sweep: Option<bool>,
    /// Default `failPolicy` of limiters on this store.
    #[napi(ts_type = "FailPolicy")]
    pub fail_policy: Option<String>,
}

/// A store in one SQLite file: every process of this machine that opens the same file (and
/// table) shares each limit exactly, each decision one transaction under the file's write lock.
#[napi]
pub struct SqliteStore {
    inner: Arc<throttlekit::store::sqlite::SqliteStore>,
    fail_policy: Option<FailPolicy>,
}

/// `SqliteStore.open()`'s options that are core's `SqliteOptions` (all but `path` and the
/// limiters' default fail policy).
const OPTIONS: &[&str] = &["table", "busyTimeoutMs", "synchronous", "migrate", "maxKeyLength", "sweep"];

/// `SqliteStore.open()`'s options: types checked here, the mapping and values core's.
fn parse(options: &Unknown) -> CoreResult<(SqliteOptions, Option<FailPolicy>)> {
    let allowed: Vec<&str> = ["path"].iter().chain(OPTIONS).chain(&["failPolicy"]).copied().collect();
    let o = Options::read(options, "sqliteStore", &allowed, false)?;
    let path = crate::convert::string(o.require("path")?, &o.path("path"))?;
    let p = SqliteOptions::from_pairs(path, o.sql_pairs(OPTIONS, SqliteOptions::kind)?)?;
    Ok((p, fail_policy_from_options(&o)?))
}

impl SqliteStore {
    /// The store and its limiter defaults, for `store::from_options`.
    pub(crate) fn chosen(&self) -> Chosen {
        Chosen { store: self.inner.clone(), redis: None, server_clock: None, fail_policy: self.fail_policy }
    }
}

#[napi]
impl SqliteStore {
    /// Opens (creating if missing) the file in WAL mode and its table (unless `migrate: false`).
    /// Throws `config_invalid` for a path that cannot be opened (a missing directory, a
    /// directory, no permission), a read-only file, a file that is not a database, a table of
    /// another shape or a bad option; `store_unavailable` when another process holds the lock
    /// past `busyTimeoutMs`.
    #[napi(factory, ts_args_type = "options: SqliteStoreOptions")]
    pub fn open(env: &Env, options: Unknown) -> napi::Result<SqliteStore> {
        let (options, fail_policy) = parse(&options).or_throw(env)?;
        let inner = throttlekit::store::sqlite::SqliteStore::with_options(options).or_throw(env)?;
        Ok(SqliteStore { inner: Arc::new(inner), fail_policy })
    }

    /// The file, as given.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.inner.options().path.to_string_lossy().into_owned()
    }

    /// The table holding the limits.
    #[napi(getter)]
    pub fn table(&self) -> String {
        self.inner.options().table.clone()
    }

    /// Closes the file; later calls fail with `store_unavailable`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'e>(&self, env: &'e Env) -> napi::Result<PromiseRaw<'e, Settled<()>>> {
        let inner = self.inner.clone();
        env.spawn_future(async move {
            use throttlekit::Store;
            Ok(Settled(inner.close().await))
        })
    }
}
