//! [`tk_store`]: where limiter state lives — in process (memory), on Redis, on Postgres or in a
//! SQLite file.

use std::ffi::c_char;
use std::sync::Arc;

use throttlekit::{MemoryLimits, MemoryStore, Store};

use crate::args::{borrow, free_handle, into_handle, out, try_arg, try_core};
use crate::panic::{guard, guard_void};
use crate::result::tk_result;

/// A state store, shared by any number of limiters, multi limiters and shapers.
///
/// Ownership: created by `tk_store_memory_new*`, `tk_store_redis_connect*`,
/// `tk_store_postgres_connect*` or `tk_store_sqlite_open`, released with
/// `tk_store_free`. Every object built on a store keeps its own reference, so the store handle
/// may be freed as soon as the last object that needs it has been *created*; the state lives
/// until the last of them is freed.
///
/// Thread safety: all functions may be called concurrently (except `tk_store_free`, which must
/// be the handle's last use).
pub struct tk_store {
    pub(crate) inner: Arc<dyn Store>,
    /// The default of limiters, multi limiters and shapers built on the store: read time from
    /// the store's server (`tk_redis_options.server_clock`, `tk_postgres_options.server_clock`;
    /// false for every other store).
    pub(crate) server_clock: bool,
}

/// The default key bound of `tk_store_memory_new` (about 110 MB resident at the bound; why this
/// number: core's `MemoryLimits::DEFAULT_MAX_KEYS`).
pub const TK_MEMORY_DEFAULT_MAX_KEYS: usize = 917_504;

/// The default longest full key (`prefix:key`), in bytes, of `tk_store_memory_new`.
pub const TK_MEMORY_DEFAULT_MAX_KEY_LENGTH: usize = 256;

// Literals above because cbindgen writes only literal constants to the header; they must be core's.
const _: () = assert!(TK_MEMORY_DEFAULT_MAX_KEYS == MemoryLimits::DEFAULT_MAX_KEYS);
const _: () = assert!(TK_MEMORY_DEFAULT_MAX_KEY_LENGTH == MemoryLimits::DEFAULT_MAX_KEY_LENGTH);

/// A new in-memory store with the default bounds: at most about
/// `TK_MEMORY_DEFAULT_MAX_KEYS` keys (the least recently used key is evicted first) and full
/// keys of at most `TK_MEMORY_DEFAULT_MAX_KEY_LENGTH` bytes (longer is
/// `TK_RESULT_CONFIG_INVALID` on every call). Its state expires on each operation's own `now`.
///
/// # Safety
/// `out_store` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_memory_new(out_store: *mut *mut tk_store) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_store, "out_store") });
        into_handle(tk_store { inner: Arc::new(MemoryStore::new()), server_clock: false }, o)
    })
}

/// A new in-memory store holding at most `max_keys` keys (the least recently used key is
/// evicted first), with the default key length limit. `max_keys == 0` is
/// `TK_RESULT_CONFIG_INVALID`; `SIZE_MAX` is no bound.
///
/// # Safety
/// `out_store` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_memory_new_bounded(max_keys: usize, out_store: *mut *mut tk_store) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_store, "out_store") });
        let store = try_core!(MemoryStore::with_max_keys(max_keys));
        into_handle(tk_store { inner: Arc::new(store), server_clock: false }, o)
    })
}

/// A new in-memory store with both bounds chosen: at most `max_keys` keys and full keys of at
/// most `max_key_length` bytes. `SIZE_MAX` lifts a bound; 0 is `TK_RESULT_CONFIG_INVALID`.
///
/// # Safety
/// `out_store` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_memory_new_with_limits(
    max_keys: usize,
    max_key_length: usize,
    out_store: *mut *mut tk_store,
) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_store, "out_store") });
        let store = try_core!(MemoryStore::with_limits(MemoryLimits { max_keys, max_key_length }));
        into_handle(tk_store { inner: Arc::new(store), server_clock: false }, o)
    })
}

/// Writes how many live keys a memory store has evicted to stay within its bound since it was
/// made (when it climbs, the bound is too small for the traffic). A Redis store is
/// `TK_RESULT_NOT_IMPLEMENTED`.
///
/// # Safety
/// `store` must be a live handle; `out_evictions` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_memory_evictions(store: *const tk_store, out_evictions: *mut u64) -> tk_result {
    guard(|| {
        let s = try_arg!(unsafe { borrow(store, "store") });
        let o = try_arg!(unsafe { out(out_evictions, "out_evictions") });
        let memory = try_core!(
            s.inner.as_memory().ok_or_else(|| throttlekit::Error::not_implemented("evictions on a Redis store"))
        );
        *o = memory.evictions();
        tk_result::Ok
    })
}

/// Connects to the one standalone Redis at `url` (e.g. `"redis://127.0.0.1:6379/0"`): the
/// short form of `tk_store_redis_connect_with` (cluster, Sentinel, TLS files, scripting),
/// whose zero-initialised options with `urls = url` it equals. It blocks until connected
/// or `timeout_ms` passed (`0` selects the default, 1000 ms; the same timeout bounds each
/// command later). `deterministic_replay` makes expiry follow each operation's `now` instead of
/// the server's clock: for replaying recorded timelines (the conformance runners), never for
/// production. A connection failure is `TK_RESULT_STORE_UNAVAILABLE`; a library built without
/// Redis support returns `TK_RESULT_NOT_IMPLEMENTED`.
///
/// # Safety
/// `url` must be a NUL-terminated string; `out_store` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_redis_connect(
    url: *const c_char,
    timeout_ms: u64,
    deterministic_replay: bool,
    out_store: *mut *mut tk_store,
) -> tk_result {
    guard(|| {
        let url = try_arg!(unsafe { crate::args::string(url, "url") });
        let o = try_arg!(unsafe { out(out_store, "out_store") });
        let store =
            try_core!(crate::redis::connect(crate::redis::Fields::url_only(url, timeout_ms, deterministic_replay)));
        into_handle(tk_store { inner: store, server_clock: false }, o)
    })
}

/// Releases a store handle; NULL is a no-op. Objects created on the store keep working.
///
/// # Safety
/// `store` must be NULL or a handle from a `tk_store_*` constructor, not already freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_free(store: *mut tk_store) {
    guard_void(|| unsafe { free_handle(store) })
}
