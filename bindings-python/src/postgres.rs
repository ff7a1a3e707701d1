//! `PostgresStore`: core's Postgres store (docs/postgres.md), every decision one SQL statement,
//! for fleets that run Postgres and no Redis. Python's keyword arguments map one to one onto
//! core's `PostgresOptions` (durations in ms); core checks every value.

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use throttlekit::FailPolicy;
use throttlekit::postgres::PostgresOptions;
use throttlekit::postgres::PostgresStore as CoreStore;

use crate::error::IntoPyResult;
use crate::store::StoreArg;
use crate::validate::{self, given};

/// A Postgres store: every decision is one `INSERT ... ON CONFLICT DO UPDATE`, atomic under
/// READ COMMITTED, so a fleet of processes shares each limit exactly.
#[pyclass(frozen, module = "throttlekit")]
pub struct PostgresStore {
    inner: Arc<CoreStore>,
    server_clock: bool,
    fail_policy: Option<FailPolicy>,
}

impl PostgresStore {
    pub(crate) fn arg(&self) -> StoreArg {
        StoreArg { store: self.inner.clone(), server_clock: self.server_clock, fail_policy: self.fail_policy }
    }
}

fn ms(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Duration> {
    Ok(Duration::from_millis(validate::count(obj, arg)?))
}

/// The keyword arguments of `PostgresStore(...)` that are core's `PostgresOptions`.
#[derive(Default)]
struct Args<'a, 'py> {
    table: Option<&'a Bound<'py, PyAny>>,
    migrate: Option<&'a Bound<'py, PyAny>>,
    unlogged: Option<&'a Bound<'py, PyAny>>,
    synchronous_commit_off: Option<&'a Bound<'py, PyAny>>,
    pool_size: Option<&'a Bound<'py, PyAny>>,
    timeout_ms: Option<&'a Bound<'py, PyAny>>,
    connect_timeout_ms: Option<&'a Bound<'py, PyAny>>,
    sweep_interval_ms: Option<&'a Bound<'py, PyAny>>,
    sweep_batch: Option<&'a Bound<'py, PyAny>>,
    sweep_grace_ms: Option<&'a Bound<'py, PyAny>>,
}

impl Args<'_, '_> {
    /// The one place Python's arguments become core's `PostgresOptions`: types checked here,
    /// values by core (`postgres.poolSize`, `postgres.timeout`, ...).
    fn options(&self, url: &str) -> PyResult<PostgresOptions> {
        let mut o = PostgresOptions::new(url);
        if let Some(t) = given(self.table) {
            o.table = validate::string(t, "table")?.to_owned();
        }
        if let Some(m) = given(self.migrate) {
            o.migrate = validate::flag(m, "migrate")?;
        }
        if let Some(u) = given(self.unlogged) {
            o.unlogged = validate::flag(u, "unlogged")?;
        }
        if let Some(s) = given(self.synchronous_commit_off) {
            o.synchronous_commit_off = validate::flag(s, "synchronous_commit_off")?;
        }
        if let Some(n) = given(self.pool_size) {
            o.pool_size = usize::try_from(validate::count(n, "pool_size")?).unwrap_or(usize::MAX);
        }
        if let Some(t) = given(self.timeout_ms) {
            o.timeout = ms(t, "timeout_ms")?;
        }
        if let Some(t) = given(self.connect_timeout_ms) {
            o.connect_timeout = ms(t, "connect_timeout_ms")?;
        }
        if let Some(t) = given(self.sweep_interval_ms) {
            // 0 turns the sweeper off (expiry on read still holds).
            o.sweep_interval = Some(ms(t, "sweep_interval_ms")?).filter(|d| !d.is_zero());
        }
        if let Some(n) = given(self.sweep_batch) {
            o.sweep_batch = i64::try_from(validate::count(n, "sweep_batch")?).unwrap_or(i64::MAX);
        }
        if let Some(t) = given(self.sweep_grace_ms) {
            o.sweep_grace = ms(t, "sweep_grace_ms")?;
        }
        Ok(o)
    }
}

#[pymethods]
impl PostgresStore {
    /// Connects to `url` (`postgres://user:password@host:port/db`, or libpq's key-value form;
    /// `sslmode=require` for TLS through rustls with the system's roots) and fills the pool of
    /// `pool_size` connections. `table` (`name` or `schema.name`) holds the limits; with
    /// `migrate` (the default) the store creates it and its functions when missing, else a
    /// missing or misshapen table raises `ConfigInvalidError`. `unlogged` creates the table
    /// `UNLOGGED` and `synchronous_commit_off` turns off synchronous commit on the store's
    /// connections (faster; docs/postgres.md says what each risks). `timeout_ms` bounds every
    /// call (a call that times out is never resent: it may have committed), `connect_timeout_ms`
    /// connecting. The sweeper deletes up to `sweep_batch` expired rows every
    /// `sweep_interval_ms` (0: never), `sweep_grace_ms` after they expired. `server_clock` makes
    /// limiters read time from Postgres (`clock_timestamp()`); `fail_policy` is what limiters
    /// answer when Postgres is unreachable. Bad options raise `ConfigInvalidError`; an
    /// unreachable server or a refused login raises `StoreUnavailableError`.
    #[new]
    #[pyo3(signature = (
        url, *, table = None, migrate = None, unlogged = None, synchronous_commit_off = None,
        pool_size = None, timeout_ms = None, connect_timeout_ms = None, sweep_interval_ms = None,
        sweep_batch = None, sweep_grace_ms = None, server_clock = None, fail_policy = None
    ))]
    #[pyo3(
        text_signature = "(url, *, table='throttlekit', migrate=True, unlogged=False, synchronous_commit_off=False, pool_size=4, timeout_ms=1000, connect_timeout_ms=3000, sweep_interval_ms=60000, sweep_batch=1000, sweep_grace_ms=60000, server_clock=False, fail_policy=None)"
    )]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments, one per option.
    fn new(
        py: Python<'_>,
        url: &Bound<'_, PyAny>,
        table: Option<&Bound<'_, PyAny>>,
        migrate: Option<&Bound<'_, PyAny>>,
        unlogged: Option<&Bound<'_, PyAny>>,
        synchronous_commit_off: Option<&Bound<'_, PyAny>>,
        pool_size: Option<&Bound<'_, PyAny>>,
        timeout_ms: Option<&Bound<'_, PyAny>>,
        connect_timeout_ms: Option<&Bound<'_, PyAny>>,
        sweep_interval_ms: Option<&Bound<'_, PyAny>>,
        sweep_batch: Option<&Bound<'_, PyAny>>,
        sweep_grace_ms: Option<&Bound<'_, PyAny>>,
        server_clock: Option<&Bound<'_, PyAny>>,
        fail_policy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let url = validate::string(url, "url")?;
        let options = Args {
            table,
            migrate,
            unlogged,
            synchronous_commit_off,
            pool_size,
            timeout_ms,
            connect_timeout_ms,
            sweep_interval_ms,
            sweep_batch,
            sweep_grace_ms,
        }
        .options(url)?;
        let server_clock = match given(server_clock) {
            Some(s) => validate::flag(s, "server_clock")?,
            None => false,
        };
        let fail_policy = given(fail_policy).map(validate::fail_policy).transpose()?;
        let store = py.detach(|| CoreStore::connect_blocking(options)).py()?;
        Ok(PostgresStore { inner: Arc::new(store), server_clock, fail_policy })
    }

    /// The table holding the limits.
    #[getter]
    fn table(&self) -> &str {
        &self.inner.options().table
    }

    /// The connections kept.
    #[getter]
    fn pool_size(&self) -> usize {
        self.inner.options().pool_size
    }

    /// Creates (or brings up to date) the table and functions of `url` and `table`, blocking:
    /// the deploy step for stores opened with `migrate=False`.
    #[staticmethod]
    #[pyo3(signature = (url, *, table = None, unlogged = None, timeout_ms = None, connect_timeout_ms = None))]
    #[pyo3(text_signature = "(url, *, table='throttlekit', unlogged=False, timeout_ms=1000, connect_timeout_ms=3000)")]
    fn migrate(
        py: Python<'_>,
        url: &Bound<'_, PyAny>,
        table: Option<&Bound<'_, PyAny>>,
        unlogged: Option<&Bound<'_, PyAny>>,
        timeout_ms: Option<&Bound<'_, PyAny>>,
        connect_timeout_ms: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let url = validate::string(url, "url")?;
        let options = Args { table, unlogged, timeout_ms, connect_timeout_ms, ..Args::default() }.options(url)?;
        // Core's `migrate` (connect with the schema's creation on, close), on the runtime that
        // drives the awaitables, entered from this thread with the GIL released.
        py.detach(|| pyo3_async_runtimes::tokio::get_runtime().block_on(CoreStore::migrate(options))).py()
    }

    /// Closes the connections (awaitable). Later calls fail with `store_unavailable`.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = self.inner.clone();
        crate::aio::awaitable(py, async move {
            use throttlekit::Store;
            store.close().await.py().map(|()| crate::none())
        })
    }

    /// Closes the connections, blocking.
    fn close_sync(&self, py: Python<'_>) -> PyResult<()> {
        use throttlekit::Store;
        let store = self.inner.clone();
        py.detach(|| pyo3_async_runtimes::tokio::get_runtime().block_on(store.close())).py()
    }

    fn __repr__(&self) -> String {
        // The URL may carry a password: keep it out of logs.
        format!("PostgresStore(table={:?})", self.inner.options().table)
    }
}
