//! `tk_store_postgres_connect`: core's Postgres store (docs/postgres.md), every decision one SQL
//! statement, for fleets that run Postgres and no Redis. Core checks every value (a bad URL or
//! table is `TK_RESULT_CONFIG_INVALID` naming it).

use std::ffi::c_char;
use std::sync::Arc;

use throttlekit::Store;

use crate::args::{into_handle, optional_string, out, string, try_arg, try_core};
use crate::panic::guard;
use crate::result::tk_result;
use crate::store::tk_store;

/// Connects a pool of `pool_size` connections (`0`: the default, 4) to the Postgres at `url`
/// (`"postgres://user:password@host:port/db"`, or libpq's key-value form; `sslmode=require` for
/// TLS through rustls), keeping limits in `table` (`NULL`: `"throttlekit"`; `name` or
/// `schema.name`), which it creates with its functions when missing. It blocks until connected;
/// `timeout_ms` (`0`: the default, 1000 ms) bounds every call later (a call that timed out is
/// never resent: it may have committed). An unreachable server or a refused login is
/// `TK_RESULT_STORE_UNAVAILABLE`; a library built without Postgres support returns
/// `TK_RESULT_NOT_IMPLEMENTED`.
///
/// # Safety
/// `url` must be a NUL-terminated string, `table` NULL or one; `out_store` must be valid for
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_postgres_connect(
    url: *const c_char,
    table: *const c_char,
    timeout_ms: u64,
    pool_size: u32,
    out_store: *mut *mut tk_store,
) -> tk_result {
    guard(|| {
        let url = try_arg!(unsafe { string(url, "url") });
        let table = try_arg!(unsafe { optional_string(table, "table") });
        let o = try_arg!(unsafe { out(out_store, "out_store") });
        let store = try_core!(connect(url, table, timeout_ms, pool_size));
        into_handle(tk_store { inner: store }, o)
    })
}

#[cfg(feature = "postgres")]
fn connect(url: &str, table: Option<&str>, timeout_ms: u64, pool_size: u32) -> throttlekit::Result<Arc<dyn Store>> {
    use throttlekit::postgres::{PostgresOptions, PostgresStore};
    use throttlekit::store::sql_options::OptionValue;
    let options = PostgresOptions::from_pairs(
        url,
        [
            ("table", table.map(|t| OptionValue::Text(t.to_string()))),
            ("timeout_ms", OptionValue::unless_zero(timeout_ms)),
            ("pool_size", OptionValue::unless_zero(pool_size.into())),
        ],
    )?;
    Ok(Arc::new(PostgresStore::connect_blocking(options)?))
}

#[cfg(not(feature = "postgres"))]
fn connect(_url: &str, _table: Option<&str>, _timeout_ms: u64, _pool_size: u32) -> throttlekit::Result<Arc<dyn Store>> {
    Err(throttlekit::Error::not_implemented("the Postgres store (built without the `postgres` feature)"))
}
