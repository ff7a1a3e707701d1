//! [`tk_postgres_options`], `tk_store_postgres_connect_with` and `tk_postgres_migrate`: core's
//! Postgres store (docs/postgres.md), every decision one SQL statement, for fleets that run
//! Postgres and no Redis. This is the one place the C ABI turns its options into core's (as
//! core's option pairs, which core maps); every check is core's (a bad URL, table or pool size
//! is `TK_RESULT_CONFIG_INVALID` naming the option).

use std::ffi::c_char;
use std::sync::Arc;

use crate::args::{borrow, into_handle, optional_string, out, string, try_arg, try_core};
use crate::panic::guard;
use crate::result::tk_result;
use crate::store::tk_store;

/// How a Postgres store connects and keeps its table: core's `PostgresOptions`, one field each
/// (docs/postgres.md, "Options"). A zero-initialised struct plus `url` is core's defaults; every
/// NULL string, 0 number and false flag keeps the default, so the two options whose default is
/// on are spelled as their negation (`no_migrate`, `no_sweep`).
///
/// Ownership: caller-owned, read only during `tk_store_postgres_connect_with` or
/// `tk_postgres_migrate` (the store copies what it keeps).
#[repr(C)]
pub struct tk_postgres_options {
    /// `"postgres://user:password@host:port/db"`, or libpq's key-value form; `sslmode` as libpq
    /// reads it (`require`, `verify-full` with `sslrootcert=FILE`: docs/postgres.md, "TLS").
    /// Required.
    pub url: *const c_char,
    /// The table holding the limits (NULL: `"throttlekit"`): `name` or `schema.name`, lowercase
    /// letters, digits and `_`.
    pub table: *const c_char,
    /// Do not create a missing table and its functions on connect: a missing or misshapen table
    /// is then `TK_RESULT_CONFIG_INVALID`, and `tk_postgres_migrate` is the deploy step that
    /// creates it. false: create them (the default).
    pub no_migrate: bool,
    /// Create the table `UNLOGGED` (no WAL: faster writes; a server crash empties it and
    /// replicas never see it). Only when the table is created here.
    pub unlogged: bool,
    /// `SET synchronous_commit = off` on the store's connections: a server crash can lose the
    /// last few hundred ms of charges.
    pub synchronous_commit_off: bool,
    /// Connections kept, each pipelining any number of calls (0: 4; at most 1024).
    pub pool_size: u32,
    /// The longest wait for any one call, in ms (0: 1000); past it the call is
    /// `TK_RESULT_STORE_UNAVAILABLE` and the limiter's fail policy decides. A call that timed
    /// out is never resent: it may have committed.
    pub timeout_ms: u64,
    /// The longest wait for one connection, in ms (0: 3000). Connecting the pool may take twice
    /// `connect_timeout_ms + timeout_ms`.
    pub connect_timeout_ms: u64,
    /// How often the sweeper deletes expired rows, in ms (0: 60000). Ignored with `no_sweep`.
    pub sweep_interval_ms: u64,
    /// Run no sweeper: expired rows stay until their key is next touched (expiry is judged on
    /// read either way). false: sweep (the default).
    pub no_sweep: bool,
    /// How many rows one sweep deletes at most (0: 1000).
    pub sweep_batch: u64,
    /// How long past its deadline, by the server's clock, a row stays before the sweeper may
    /// delete it, in ms (0: 60000): room for callers whose clocks run behind the server's.
    pub sweep_grace_ms: u64,
    /// Limiters, multi limiters and shapers built on this store read time from Postgres
    /// (`clock_timestamp()`, after the row lock) instead of their clock: the clock for a fleet
    /// on windowed strategies (docs/postgres.md, "Clocks"). Their `_at` calls then ignore
    /// `now`. false: each caller's own clock (the default).
    pub server_clock: bool,
}

/// Connects a Postgres store as `options` say: fills the pool, creating the table and its
/// functions when missing (unless `no_migrate`), and checks the table's shape. It blocks until
/// connected, at most twice `connect_timeout_ms + timeout_ms`. A bad option, or with
/// `no_migrate` a missing or misshapen table, is `TK_RESULT_CONFIG_INVALID` (the last error
/// names the option or the table); an unreachable server, a refused login or a connection past
/// its timeout is `TK_RESULT_STORE_UNAVAILABLE`. A library built without Postgres support
/// returns `TK_RESULT_NOT_IMPLEMENTED`.
///
/// # Safety
/// `options` must point to a valid `tk_postgres_options` whose strings are NULL or
/// NUL-terminated; `out_store` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_postgres_connect_with(
    options: *const tk_postgres_options,
    out_store: *mut *mut tk_store,
) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { borrow(options, "options") });
        let out_store = try_arg!(unsafe { out(out_store, "out_store") });
        let fields = try_arg!(unsafe { Fields::read(o) });
        let server_clock = fields.server_clock;
        let store = try_core!(connect(fields));
        into_handle(tk_store { inner: store, server_clock }, out_store)
    })
}

/// Creates (or brings up to date) the table and functions `options` name (`url`, `table`,
/// `unlogged`, the timeouts; `no_migrate` and the sweeper's fields are ignored), then
/// disconnects, blocking: the deploy step for stores connected with `no_migrate`. Errors as
/// `tk_store_postgres_connect_with`'s.
///
/// # Safety
/// As `tk_store_postgres_connect_with`'s `options`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_postgres_migrate(options: *const tk_postgres_options) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { borrow(options, "options") });
        let fields = try_arg!(unsafe { Fields::read(o) });
        try_core!(migrate(fields));
        tk_result::Ok
    })
}

/// Connects a pool of `pool_size` connections (`0`: the default, 4) to the Postgres at `url`,
/// keeping limits in `table` (`NULL`: `"throttlekit"`), created with its functions when
/// missing; `timeout_ms` (`0`: the default, 1000 ms) bounds every call. The short form of
/// `tk_store_postgres_connect_with` (no migrate step, unlogged tables, the sweeper, the server's
/// clock), whose zero-initialised options with these four fields it equals; errors as its.
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
    let options = tk_postgres_options {
        url,
        table,
        no_migrate: false,
        unlogged: false,
        synchronous_commit_off: false,
        pool_size,
        timeout_ms,
        connect_timeout_ms: 0,
        sweep_interval_ms: 0,
        no_sweep: false,
        sweep_batch: 0,
        sweep_grace_ms: 0,
        server_clock: false,
    };
    unsafe { tk_store_postgres_connect_with(&options, out_store) }
}

/// The options' strings, borrowed and checked for NULL/UTF-8; numbers and flags as given. Read
/// (and so checked) without the `postgres` feature too, whose functions then use none of them.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
struct Fields<'a> {
    url: &'a str,
    table: Option<&'a str>,
    no_migrate: bool,
    unlogged: bool,
    synchronous_commit_off: bool,
    pool_size: u32,
    timeout_ms: u64,
    connect_timeout_ms: u64,
    sweep_interval_ms: u64,
    no_sweep: bool,
    sweep_batch: u64,
    sweep_grace_ms: u64,
    server_clock: bool,
}

impl<'a> Fields<'a> {
    /// Borrows every string of `o`.
    ///
    /// # Safety
    /// `o`'s strings must be NULL or NUL-terminated and outlive `'a`.
    unsafe fn read(o: &'a tk_postgres_options) -> Result<Fields<'a>, tk_result> {
        Ok(Fields {
            url: unsafe { string(o.url, "options.url") }?,
            table: unsafe { optional_string(o.table, "options.table") }?,
            no_migrate: o.no_migrate,
            unlogged: o.unlogged,
            synchronous_commit_off: o.synchronous_commit_off,
            pool_size: o.pool_size,
            timeout_ms: o.timeout_ms,
            connect_timeout_ms: o.connect_timeout_ms,
            sweep_interval_ms: o.sweep_interval_ms,
            no_sweep: o.no_sweep,
            sweep_batch: o.sweep_batch,
            sweep_grace_ms: o.sweep_grace_ms,
            server_clock: o.server_clock,
        })
    }

    /// Core's options: the fields as core's option pairs (0, NULL and false: core's default),
    /// which core maps and checks.
    #[cfg(feature = "postgres")]
    fn options(&self) -> throttlekit::Result<throttlekit::postgres::PostgresOptions> {
        use throttlekit::store::sql_options::OptionValue;
        let flag = |on: bool| on.then_some(OptionValue::Flag(true));
        throttlekit::postgres::PostgresOptions::from_pairs(
            self.url,
            [
                ("table", self.table.map(|t| OptionValue::Text(t.to_string()))),
                ("migrate", self.no_migrate.then_some(OptionValue::Flag(false))),
                ("unlogged", flag(self.unlogged)),
                ("synchronous_commit_off", flag(self.synchronous_commit_off)),
                ("pool_size", OptionValue::unless_zero(self.pool_size.into())),
                ("timeout_ms", OptionValue::unless_zero(self.timeout_ms)),
                ("connect_timeout_ms", OptionValue::unless_zero(self.connect_timeout_ms)),
                ("sweep_interval_ms", OptionValue::unless_zero(self.sweep_interval_ms)),
                // Core's 0: no sweeper (after the interval, so that `no_sweep` wins).
                ("sweep_interval_ms", self.no_sweep.then_some(OptionValue::Int(0))),
                ("sweep_batch", OptionValue::unless_zero(self.sweep_batch)),
                ("sweep_grace_ms", OptionValue::unless_zero(self.sweep_grace_ms)),
            ],
        )
    }
}

#[cfg(feature = "postgres")]
fn connect(f: Fields<'_>) -> throttlekit::Result<Arc<dyn throttlekit::Store>> {
    Ok(Arc::new(throttlekit::postgres::PostgresStore::connect_blocking(f.options()?)?))
}

#[cfg(feature = "postgres")]
fn migrate(f: Fields<'_>) -> throttlekit::Result<()> {
    throttlekit::postgres::PostgresStore::migrate_blocking(f.options()?)
}

#[cfg(not(feature = "postgres"))]
fn connect(_f: Fields<'_>) -> throttlekit::Result<Arc<dyn throttlekit::Store>> {
    Err(unbuilt())
}

#[cfg(not(feature = "postgres"))]
fn migrate(_f: Fields<'_>) -> throttlekit::Result<()> {
    Err(unbuilt())
}

#[cfg(not(feature = "postgres"))]
fn unbuilt() -> throttlekit::Error {
    throttlekit::Error::not_implemented("the Postgres store (built without the `postgres` feature)")
}
