//! `SqliteStore`: core's SQLite store (one file shared by a machine's processes), configured
//! from Python's keyword arguments. Core maps them and checks every value.

use std::sync::Arc;

use pyo3::prelude::*;
use throttlekit::FailPolicy;
use throttlekit::store::sql_options::OptionValue;
use throttlekit::store::sqlite::SqliteOptions;

use crate::error::{self, IntoPyResult};
use crate::store::StoreArg;
use crate::validate::{self, MaxKeyLength};

/// A store in one SQLite file: every process of this machine that opens the same file shares
/// each limit exactly (each decision is one transaction under the file's write lock).
#[pyclass(frozen, module = "throttlekit")]
pub struct SqliteStore {
    inner: Arc<throttlekit::store::sqlite::SqliteStore>,
    fail_policy: Option<FailPolicy>,
}

impl SqliteStore {
    pub(crate) fn arg(&self) -> StoreArg {
        StoreArg { store: self.inner.clone(), server_clock: false, fail_policy: self.fail_policy }
    }
}

#[pymethods]
impl SqliteStore {
    /// Opens (creating if missing) the SQLite file at `path` in WAL mode. `table` names the
    /// table holding the state (created on first use unless `migrate=False`, when a missing
    /// table raises `ConfigInvalidError`). `busy_timeout_ms` is how long a call waits for
    /// another process's write lock before `StoreUnavailableError` (or the `fail_policy`:
    /// `"fail_closed"`, `"fail_open"` or `"raise"`). `synchronous` is `"normal"` (a commit
    /// survives a crash of the process) or `"full"` (and a power loss). `sweep=False` leaves
    /// expired rows until their key is touched (conformance replays). A path that cannot be
    /// opened, a read-only file, a file that is not a database and a table of another shape
    /// raise `ConfigInvalidError`.
    #[new]
    #[pyo3(signature = (
        path, *, table = None, busy_timeout_ms = None, synchronous = None, migrate = None,
        max_key_length = MaxKeyLength(throttlekit::key::DEFAULT_MAX_LENGTH), sweep = None, fail_policy = None
    ))]
    #[pyo3(
        text_signature = "(path, *, table='throttlekit', busy_timeout_ms=5000, synchronous='normal', migrate=True, max_key_length=256, sweep=True, fail_policy=None)"
    )]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments, one per option.
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        table: Option<&Bound<'_, PyAny>>,
        busy_timeout_ms: Option<&Bound<'_, PyAny>>,
        synchronous: Option<&Bound<'_, PyAny>>,
        migrate: Option<&Bound<'_, PyAny>>,
        max_key_length: MaxKeyLength,
        sweep: Option<&Bound<'_, PyAny>>,
        fail_policy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let path = path
            .extract::<std::path::PathBuf>()
            .map_err(|_| error::wrong_type("path", "a str or an os.PathLike", path))?;
        let mut pairs = validate::sql_options(
            &[
                ("table", table),
                ("busy_timeout_ms", busy_timeout_ms),
                ("synchronous", synchronous),
                ("migrate", migrate),
                ("sweep", sweep),
            ],
            SqliteOptions::kind,
        )?;
        // Checked by its own argument type (`None`: no limit).
        pairs.push(("max_key_length", Some(OptionValue::Int(i64::try_from(max_key_length.0).unwrap_or(i64::MAX)))));
        let o = SqliteOptions::from_pairs(path, pairs).py()?;
        let fail_policy = validate::given(fail_policy).map(validate::fail_policy).transpose()?;
        let store = py.detach(|| throttlekit::store::sqlite::SqliteStore::with_options(o)).py()?;
        Ok(SqliteStore { inner: Arc::new(store), fail_policy })
    }

    /// The file it opened, as given.
    #[getter]
    fn path(&self) -> String {
        self.inner.options().path.to_string_lossy().into_owned()
    }

    /// The table holding the state.
    #[getter]
    fn table(&self) -> &str {
        &self.inner.options().table
    }

    /// Closes the connection (awaitable). Later calls fail with `store_unavailable`.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = self.inner.clone();
        crate::aio::awaitable(py, async move { throttlekit::Store::close(&*store).await.py().map(|()| crate::none()) })
    }

    /// Closes the connection, blocking.
    fn close_sync(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.inner.clone();
        py.detach(|| pyo3_async_runtimes::tokio::get_runtime().block_on(throttlekit::Store::close(&*store))).py()
    }

    fn __repr__(&self) -> String {
        let o = self.inner.options();
        format!("SqliteStore(path={:?}, table={:?})", o.path.display().to_string(), o.table)
    }
}
