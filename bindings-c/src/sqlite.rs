//! [`tk_sqlite_options`] and `tk_store_sqlite_open`: core's SQLite store (docs/sqlite.md), the
//! limits in one file that every process of one machine opening it shares. Core checks every
//! value (a bad table name, a directory as path, a file that is not a database are
//! `TK_RESULT_CONFIG_INVALID` naming it).

use std::ffi::c_char;
use std::sync::Arc;

use throttlekit::Store;

use crate::args::{into_handle, optional_string, out, string, try_arg, try_core};
use crate::panic::guard;
use crate::result::tk_result;
use crate::store::tk_store;

/// How a SQLite store's commits reach the disk (a `uint32_t` in `tk_sqlite_options`, so an
/// out-of-range number is `TK_RESULT_CONFIG_INVALID`, not undefined behaviour).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tk_sqlite_synchronous {
    /// No `fsync` per commit: a commit survives the process crashing, not a power loss (default).
    Normal = 0,
    /// The log synced at every commit: a commit survives a power loss; each decision waits for
    /// the disk.
    Full = 1,
}

/// How a SQLite store opens its file: core's `SqliteOptions`, one field each. A
/// zero-initialised struct (or a NULL pointer) is core's defaults; every NULL string and 0
/// number keeps the default.
///
/// Ownership: caller-owned, read only during `tk_store_sqlite_open`.
#[repr(C)]
pub struct tk_sqlite_options {
    /// The table holding the limits (NULL: `"throttlekit"`): a letter or `_`, then letters,
    /// digits or `_`. Several tables may share a file.
    pub table: *const c_char,
    /// How long a call waits for another process's write lock before
    /// `TK_RESULT_STORE_UNAVAILABLE` (and the limiter's fail policy), in ms (0: 5000).
    pub busy_timeout_ms: u64,
    /// A `tk_sqlite_synchronous` number (0: normal).
    pub synchronous: u32,
    /// Do not create a missing table: opening fails with `TK_RESULT_CONFIG_INVALID` instead
    /// (schemas managed by migrations). false: create it (the default).
    pub no_migrate: bool,
    /// Longest full key (`prefix:key`) accepted, in bytes (0: 256).
    pub max_key_length: usize,
    /// Do not sweep expired rows in the background of decisions: an expired row goes only when
    /// its key is next touched, so expiry follows nothing but the callers' clock (conformance
    /// replays). false: sweep (the default).
    pub no_sweep: bool,
}

/// Opens (creating if missing) the SQLite file at `path` as a store, as `options` say (NULL:
/// the defaults), in WAL mode, creating its table when missing. Every process of this machine
/// that opens the same file and table shares each limit exactly; each decision is one
/// transaction under the file's write lock (docs/sqlite.md). A path that cannot be opened (a
/// missing directory, a directory, no permission), a read-only file, a file that is not a
/// database, a table of another shape or a bad option is `TK_RESULT_CONFIG_INVALID` (the last
/// error names the cause); the lock held by another process past `busy_timeout_ms` while
/// opening is `TK_RESULT_STORE_UNAVAILABLE`. A library built without SQLite support returns
/// `TK_RESULT_NOT_IMPLEMENTED`.
///
/// # Safety
/// `path` must be a NUL-terminated string; `options` NULL or a valid `tk_sqlite_options` whose
/// `table` is NULL or NUL-terminated; `out_store` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_sqlite_open(
    path: *const c_char,
    options: *const tk_sqlite_options,
    out_store: *mut *mut tk_store,
) -> tk_result {
    guard(|| {
        let path = try_arg!(unsafe { string(path, "path") });
        // SAFETY: NULL or valid, by the caller's contract.
        let options = unsafe { options.as_ref() };
        let table =
            try_arg!(unsafe { optional_string(options.map_or(std::ptr::null(), |o| o.table), "options.table") });
        let o = try_arg!(unsafe { out(out_store, "out_store") });
        let store = try_core!(open(path, table, options));
        into_handle(tk_store { inner: store, server_clock: false }, o)
    })
}

/// The C fields as core's option pairs (0 and NULL: core's default), which core maps.
#[cfg(feature = "sqlite")]
fn open(path: &str, table: Option<&str>, o: Option<&tk_sqlite_options>) -> throttlekit::Result<Arc<dyn Store>> {
    use throttlekit::store::sql_options::OptionValue;
    use throttlekit::store::sqlite::{SqliteOptions, SqliteStore};
    let mut pairs = vec![("table", table.map(|t| OptionValue::Text(t.to_string())))];
    if let Some(o) = o {
        let synchronous = match o.synchronous {
            x if x == tk_sqlite_synchronous::Normal as u32 => "normal",
            x if x == tk_sqlite_synchronous::Full as u32 => "full",
            n => {
                return Err(throttlekit::Error::config(
                    "sqlite.synchronous",
                    &format!("{n} is not a tk_sqlite_synchronous number"),
                ));
            }
        };
        pairs.extend([
            ("busy_timeout_ms", OptionValue::unless_zero(o.busy_timeout_ms)),
            ("synchronous", Some(OptionValue::Text(synchronous.to_string()))),
            ("migrate", Some(OptionValue::Flag(!o.no_migrate))),
            ("max_key_length", OptionValue::unless_zero(o.max_key_length as u64)),
            ("sweep", Some(OptionValue::Flag(!o.no_sweep))),
        ]);
    }
    let options = SqliteOptions::from_pairs(path, pairs)?;
    Ok(Arc::new(SqliteStore::with_options(options)?))
}

#[cfg(not(feature = "sqlite"))]
fn open(_path: &str, _table: Option<&str>, _o: Option<&tk_sqlite_options>) -> throttlekit::Result<Arc<dyn Store>> {
    Err(throttlekit::Error::not_implemented("the SQLite store (built without the `sqlite` feature)"))
}
