//! [`tk_store`]: where limiter state lives — in process (memory) or on Redis.

use std::ffi::c_char;
use std::sync::Arc;

use throttlekit::{MemoryStore, Store};

use crate::args::{free_handle, into_handle, out, try_arg, try_core};
use crate::panic::{guard, guard_void};
use crate::result::tk_result;

/// A state store, shared by any number of limiters, multi limiters and shapers.
///
/// Ownership: created by `tk_store_memory_new*` or `tk_store_redis_connect*`, released with
/// `tk_store_free`. Every object built on a store keeps its own reference, so the store handle
/// may be freed as soon as the last object that needs it has been *created*; the state lives
/// until the last of them is freed.
///
/// Thread safety: all functions may be called concurrently (except `tk_store_free`, which must
/// be the handle's last use).
pub struct tk_store {
    pub(crate) inner: Arc<dyn Store>,
}

/// A new, unbounded in-memory store. Its state expires on each operation's own `now`.
///
/// # Safety
/// `out_store` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_memory_new(out_store: *mut *mut tk_store) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_store, "out_store") });
        into_handle(tk_store { inner: Arc::new(MemoryStore::new()) }, o)
    })
}

/// A new in-memory store holding at most `max_keys` keys (the least recently used key is
/// evicted first). `max_keys == 0` is `TK_RESULT_CONFIG_INVALID`.
///
/// # Safety
/// `out_store` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_memory_new_bounded(max_keys: usize, out_store: *mut *mut tk_store) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { out(out_store, "out_store") });
        let store = try_core!(MemoryStore::with_max_keys(max_keys));
        into_handle(tk_store { inner: Arc::new(store) }, o)
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
        into_handle(tk_store { inner: store }, o)
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
