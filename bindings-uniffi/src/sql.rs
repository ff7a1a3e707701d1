//! The SQL stores: `PostgresStore` (a fleet that runs Postgres and no Redis) and `SqliteStore`
//! (one machine's processes sharing a file). Their options are core's `PostgresOptions` and
//! `SqliteOptions` under the same names (durations in ms); core maps and checks every value.

use std::sync::Arc;

use throttlekit::postgres::PostgresOptions;
use throttlekit::store::sql_options::OptionValue;
use throttlekit::store::sqlite::SqliteOptions;

use crate::error::Result;
use crate::store::FailPolicy;

/// How a `PostgresStore` connects and keeps its table (docs/postgres.md, "Options"), and the
/// defaults limiters on it take. `null` (Ruby `nil`) takes core's default.
#[derive(Clone, Debug, uniffi::Record)]
pub struct PostgresStoreOptions {
    /// The table: `name` or `schema.name`. `null`: `throttlekit`.
    #[uniffi(default = None)]
    pub table: Option<String>,
    /// Create the table and its functions when missing, on connect. Off: a missing or misshapen
    /// table is `config_invalid` (`postgres_migrate_blocking` is the deploy step). `null`: on.
    #[uniffi(default = None)]
    pub migrate: Option<bool>,
    /// Create the table `UNLOGGED` (faster; a server crash empties it). `null`: off.
    #[uniffi(default = None)]
    pub unlogged: Option<bool>,
    /// `synchronous_commit = off` on the store's connections (a server crash can lose the last
    /// few hundred ms of decisions). `null`: off.
    #[uniffi(default = None)]
    pub synchronous_commit_off: Option<bool>,
    /// Connections kept. `null`: 4.
    #[uniffi(default = None)]
    pub pool_size: Option<i64>,
    /// How long one call may take, ms; past it `store_unavailable`, never resent (it may have
    /// committed). `null`: 1000.
    #[uniffi(default = None)]
    pub timeout_ms: Option<i64>,
    /// How long connecting may take, ms. `null`: 3000.
    #[uniffi(default = None)]
    pub connect_timeout_ms: Option<i64>,
    /// How often the sweeper deletes expired rows, ms (0: never; expiry on read still holds).
    /// `null`: 60000.
    #[uniffi(default = None)]
    pub sweep_interval_ms: Option<i64>,
    /// The most rows one sweep deletes. `null`: 1000.
    #[uniffi(default = None)]
    pub sweep_batch: Option<i64>,
    /// How long past its deadline (server clock) a row stays before the sweeper may delete it,
    /// ms. `null`: 60000.
    #[uniffi(default = None)]
    pub sweep_grace_ms: Option<i64>,
    /// Limiters read time from Postgres (`clock_timestamp()`) instead of this host.
    #[uniffi(default = false)]
    pub server_clock: bool,
    /// What limiters answer when Postgres is unreachable (`null`: fail-closed for quotas, raise
    /// otherwise).
    #[uniffi(default = None)]
    pub fail_policy: Option<FailPolicy>,
}

impl PostgresStoreOptions {
    /// Core's options for `url`: core maps every option (`config_invalid` naming it, as spelled
    /// here).
    fn core(&self, url: String) -> Result<PostgresOptions> {
        Ok(PostgresOptions::from_pairs(
            url,
            [
                ("table", self.table.clone().map(OptionValue::Text)),
                ("migrate", self.migrate.map(OptionValue::Flag)),
                ("unlogged", self.unlogged.map(OptionValue::Flag)),
                ("synchronous_commit_off", self.synchronous_commit_off.map(OptionValue::Flag)),
                ("pool_size", self.pool_size.map(OptionValue::Int)),
                ("timeout_ms", self.timeout_ms.map(OptionValue::Int)),
                ("connect_timeout_ms", self.connect_timeout_ms.map(OptionValue::Int)),
                ("sweep_interval_ms", self.sweep_interval_ms.map(OptionValue::Int)),
                ("sweep_batch", self.sweep_batch.map(OptionValue::Int)),
                ("sweep_grace_ms", self.sweep_grace_ms.map(OptionValue::Int)),
            ],
        )?)
    }
}

/// Closes a store from a caller without an async runtime: core's close is async only, so a
/// private current-thread runtime drives it (the store's own runtime must not be blocked on).
pub(crate) fn close_blocking(store: &dyn throttlekit::Store) -> Result<()> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(throttlekit::Error::store)?;
    Ok(runtime.block_on(store.close())?)
}

/// A Postgres store: every decision is one `INSERT ... ON CONFLICT DO UPDATE`, atomic under
/// READ COMMITTED, so a fleet of processes shares each limit exactly.
#[derive(uniffi::Object)]
pub struct PostgresStore {
    pub(crate) inner: Arc<throttlekit::postgres::PostgresStore>,
    pub(crate) server_clock: bool,
    pub(crate) fail_policy: Option<throttlekit::FailPolicy>,
}

#[uniffi::export(async_runtime = "tokio")]
impl PostgresStore {
    /// Connects to `url` (`postgres://user:password@host:port/db`, or libpq's key-value form;
    /// `sslmode=require` for TLS), blocking until the pool is filled and the table checked. A
    /// bad option, a missing table with `migrate` off or a table of another shape is
    /// `config_invalid`; an unreachable server or a refused login `store_unavailable`.
    #[uniffi::constructor]
    pub fn new(url: String, options: PostgresStoreOptions) -> Result<Arc<Self>> {
        let store = throttlekit::postgres::PostgresStore::connect_blocking(options.core(url)?)?;
        Ok(Arc::new(PostgresStore {
            inner: Arc::new(store),
            server_clock: options.server_clock,
            fail_policy: options.fail_policy.map(Into::into),
        }))
    }

    /// The table holding the limits.
    pub fn table(&self) -> String {
        self.inner.options().table.clone()
    }

    /// Closes the connections, blocking. Later calls fail with `store_unavailable`.
    pub fn disconnect_blocking(&self) -> Result<()> {
        close_blocking(&*self.inner)
    }

    /// Closes the connections. Later calls fail with `store_unavailable`.
    pub async fn disconnect(&self) -> Result<()> {
        Ok(throttlekit::Store::close(&*self.inner).await?)
    }
}

/// Creates (or brings up to date) the table and functions `options` name at `url`, then
/// disconnects, blocking: the deploy step for stores opened with `migrate: false`.
#[uniffi::export]
pub fn postgres_migrate_blocking(url: String, options: PostgresStoreOptions) -> Result<()> {
    let options = options.core(url)?;
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(throttlekit::Error::store)?;
    Ok(runtime.block_on(throttlekit::postgres::PostgresStore::migrate(options))?)
}

/// How a `SqliteStore` opens its file (docs/sqlite.md). `null` takes core's default.
#[derive(Clone, Debug, uniffi::Record)]
pub struct SqliteStoreOptions {
    /// The table holding the state. `null`: `throttlekit`.
    #[uniffi(default = None)]
    pub table: Option<String>,
    /// How long a call waits for another process's write lock before `store_unavailable`, ms.
    /// `null`: 5000.
    #[uniffi(default = None)]
    pub busy_timeout_ms: Option<i64>,
    /// `"normal"` (a commit survives a crash of the process) or `"full"` (and a power loss).
    /// `null`: normal.
    #[uniffi(default = None)]
    pub synchronous: Option<String>,
    /// Create the table when missing. Off: a missing table is `config_invalid`. `null`: on.
    #[uniffi(default = None)]
    pub migrate: Option<bool>,
    /// Longest full key (`prefix:key`) in bytes (>= 1). `null`: 256.
    #[uniffi(default = None)]
    pub max_key_length: Option<i64>,
    /// Sweep long-expired rows as decisions go. Off, expiry follows only the callers' clock
    /// (conformance replays). `null`: on.
    #[uniffi(default = None)]
    pub sweep: Option<bool>,
    /// What limiters answer when the file stays locked past the busy timeout (`null`:
    /// fail-closed for quotas, raise otherwise).
    #[uniffi(default = None)]
    pub fail_policy: Option<FailPolicy>,
}

/// A store in one SQLite file (WAL mode): every process of this machine that opens the same
/// file shares each limit exactly, each decision one transaction under the file's write lock.
#[derive(uniffi::Object)]
pub struct SqliteStore {
    pub(crate) inner: Arc<throttlekit::store::sqlite::SqliteStore>,
    pub(crate) fail_policy: Option<throttlekit::FailPolicy>,
}

#[uniffi::export(async_runtime = "tokio")]
impl SqliteStore {
    /// Opens (creating if missing) the file at `path`. A path that cannot be opened, a file
    /// that is not a database, a missing table with `migrate` off and a table of another shape
    /// are `config_invalid`.
    #[uniffi::constructor]
    pub fn new(path: String, options: SqliteStoreOptions) -> Result<Arc<Self>> {
        let o = SqliteOptions::from_pairs(
            path,
            [
                ("table", options.table.map(OptionValue::Text)),
                ("busy_timeout_ms", options.busy_timeout_ms.map(OptionValue::Int)),
                ("synchronous", options.synchronous.map(OptionValue::Text)),
                ("migrate", options.migrate.map(OptionValue::Flag)),
                ("max_key_length", options.max_key_length.map(OptionValue::Int)),
                ("sweep", options.sweep.map(OptionValue::Flag)),
            ],
        )?;
        let store = throttlekit::store::sqlite::SqliteStore::with_options(o)?;
        Ok(Arc::new(SqliteStore { inner: Arc::new(store), fail_policy: options.fail_policy.map(Into::into) }))
    }

    /// The table holding the state.
    pub fn table(&self) -> String {
        self.inner.options().table.clone()
    }

    /// Closes the connection, blocking. Later calls fail with `store_unavailable`.
    pub fn disconnect_blocking(&self) -> Result<()> {
        close_blocking(&*self.inner)
    }

    /// Closes the connection. Later calls fail with `store_unavailable`.
    pub async fn disconnect(&self) -> Result<()> {
        Ok(throttlekit::Store::close(&*self.inner).await?)
    }
}
