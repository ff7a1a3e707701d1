//! `PostgresStore`: core's Postgres store (docs/postgres.md), every decision one SQL statement,
//! for fleets that run Postgres and no Redis. Python's keyword arguments are core's
//! `PostgresOptions` (durations in ms), mapped and checked by core.

use std::sync::Arc;

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

/// Core's options for `url` from `PostgresStore(...)`'s keyword arguments that are core's
/// `PostgresOptions` (`None`: the default): types checked here, the mapping and values core's.
fn options(url: &str, args: &[(&str, Option<&Bound<'_, PyAny>>)]) -> PyResult<PostgresOptions> {
    PostgresOptions::from_pairs(url, validate::sql_options(args, PostgresOptions::kind)?).py()
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
        let options = options(
            url,
            &[
                ("table", table),
                ("migrate", migrate),
                ("unlogged", unlogged),
                ("synchronous_commit_off", synchronous_commit_off),
                ("pool_size", pool_size),
                ("timeout_ms", timeout_ms),
                ("connect_timeout_ms", connect_timeout_ms),
                ("sweep_interval_ms", sweep_interval_ms),
                ("sweep_batch", sweep_batch),
                ("sweep_grace_ms", sweep_grace_ms),
            ],
        )?;
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
        let options = options(
            url,
            &[
                ("table", table),
                ("unlogged", unlogged),
                ("timeout_ms", timeout_ms),
                ("connect_timeout_ms", connect_timeout_ms),
            ],
        )?;
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
