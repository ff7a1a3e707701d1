//! [`tk_redis_options`]: how a Redis store reaches Redis (core's `RedisOptions`, one field each,
//! `docs/redis.md`), and `tk_store_redis_connect_with`. This is the one place the C ABI turns
//! its options into core's; every check (a bad mode, TLS files on a plaintext URL, a missing
//! service name) is core's, reported as `TK_RESULT_CONFIG_INVALID` naming the option.

use std::ffi::c_char;
use std::sync::Arc;

use throttlekit::Store;

use crate::args::{borrow, into_handle, optional_string, out, string, try_arg, try_core};
use crate::panic::guard;
use crate::result::tk_result;
use crate::store::tk_store;

/// How the servers behind `tk_redis_options.urls` are organised (passed as a `uint32_t`, so an
/// out-of-range number is `TK_RESULT_CONFIG_INVALID`, not undefined behaviour).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tk_redis_mode {
    /// One server; `urls` holds exactly one URL (the default).
    Standalone = 0,
    /// A Redis Cluster; `urls` are seed nodes (any one that answers is enough).
    Cluster = 1,
    /// Sentinel; `urls` are sentinels and `service_name` names the master to follow.
    Sentinel = 2,
}

/// How the Lua scripts reach the server (a `uint32_t` in `tk_redis_options`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tk_redis_scripting {
    /// Functions on servers that accept `FUNCTION LOAD` (Redis >= 7), else scripts (default).
    Auto = 0,
    /// `FUNCTION LOAD` once, then `FCALL`; connecting fails if the server refuses functions.
    Functions = 1,
    /// `EVALSHA`, and `EVAL` only after `NOSCRIPT`.
    Eval = 2,
}

/// How a Redis store connects. A zero-initialised struct plus `urls` is a standalone,
/// plaintext store with core's defaults; every NULL string and 0 number keeps the default.
///
/// Ownership: caller-owned, read only during `tk_store_redis_connect_with` (the store copies
/// what it keeps; the TLS files are read then, not later).
#[repr(C)]
pub struct tk_redis_options {
    /// One URL, or several separated by commas (cluster seed nodes, sentinels):
    /// `redis://[user:password@]host:port[/db]`, `rediss://` for TLS, `redis+unix:///path`.
    /// Required.
    pub urls: *const c_char,
    /// A `tk_redis_mode` number (0: standalone).
    pub mode: u32,
    /// Sentinel mode only, and required there: the name in `sentinel monitor NAME ...`.
    pub service_name: *const c_char,
    /// PEM file of the CA certificates to trust instead of the system's roots (`rediss://`
    /// only). The server's certificate and host name are always verified.
    pub tls_ca_file: *const c_char,
    /// PEM client certificate for mutual TLS; needs `tls_key_file`.
    pub tls_cert_file: *const c_char,
    /// PEM private key of `tls_cert_file`.
    pub tls_key_file: *const c_char,
    /// A `tk_redis_scripting` number (0: auto).
    pub scripting: u32,
    /// The longest wait for any one call, connecting included, in ms (0: 1000). Past it the
    /// call fails with `TK_RESULT_STORE_UNAVAILABLE` and the limiter's fail policy decides.
    pub timeout_ms: u64,
    /// Expire keys on each operation's `now` instead of the server's clock: for replaying
    /// recorded timelines (the conformance runners), never for production.
    pub deterministic_replay: bool,
    /// Make each charge durable before admitting it: this many replicas (at most 64) must
    /// acknowledge the call's writes within `durable_timeout_ms`, else the call fails with
    /// `TK_RESULT_STORE_UNAVAILABLE` and the fail policy decides (0: off, the default).
    pub durable_replicas: u32,
    /// How long the server waits for those replicas, in ms (0: 100); must be less than
    /// `timeout_ms`.
    pub durable_timeout_ms: u64,
    /// Sentinel mode: the password the sentinels themselves require (`requirepass` in
    /// sentinel.conf); the URLs' credentials stay the master's. NULL: none.
    pub sentinel_password: *const c_char,
    /// Sentinel mode: the sentinels' ACL user for `sentinel_password` (NULL: their default user).
    pub sentinel_username: *const c_char,
    /// Limiters, multi limiters and shapers built on this store decide at Redis's time (`TIME`,
    /// read by each script) instead of their clock's: the time a store decides at then only
    /// moves forward for each key, whatever order callers reach it in (the clock for a fleet
    /// whose clocks disagree; docs/bindings-redis.md). Their `_at` calls' `now` then stamps only
    /// the fail policy's fallback. false: each caller's own clock (the default; last in the
    /// struct, so a zero-initialised one keeps it off).
    pub server_clock: bool,
}

/// Connects a Redis store as `options` say, blocking until connected or `timeout_ms` passed.
/// A bad option or combination is `TK_RESULT_CONFIG_INVALID` (the last error names the
/// option); a server that cannot be reached, or whose TLS certificate fails verification, is
/// `TK_RESULT_STORE_UNAVAILABLE` (the last error names the cause). A library built without
/// Redis support returns `TK_RESULT_NOT_IMPLEMENTED`.
///
/// # Safety
/// `options` must point to a valid `tk_redis_options` whose strings are NULL or
/// NUL-terminated; `out_store` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_store_redis_connect_with(
    options: *const tk_redis_options,
    out_store: *mut *mut tk_store,
) -> tk_result {
    guard(|| {
        let o = try_arg!(unsafe { borrow(options, "options") });
        let out_store = try_arg!(unsafe { out(out_store, "out_store") });
        let fields = try_arg!(unsafe { Fields::read(o) });
        let store = try_core!(connect(fields));
        into_handle(tk_store { inner: store, server_clock: o.server_clock }, out_store)
    })
}

/// The options' strings, borrowed and checked for NULL/UTF-8; numbers as given. Read (and so
/// checked) without the `redis` feature too, whose `connect` then uses none of them.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) struct Fields<'a> {
    pub urls: &'a str,
    pub mode: u32,
    pub service_name: Option<&'a str>,
    pub tls_ca_file: Option<&'a str>,
    pub tls_cert_file: Option<&'a str>,
    pub tls_key_file: Option<&'a str>,
    pub scripting: u32,
    pub timeout_ms: u64,
    pub deterministic_replay: bool,
    pub durable_replicas: u32,
    pub durable_timeout_ms: u64,
    pub sentinel_password: Option<&'a str>,
    pub sentinel_username: Option<&'a str>,
}

impl<'a> Fields<'a> {
    /// Borrows every string of `o`.
    ///
    /// # Safety
    /// `o`'s strings must be NULL or NUL-terminated and outlive `'a`.
    unsafe fn read(o: &'a tk_redis_options) -> Result<Fields<'a>, tk_result> {
        Ok(Fields {
            urls: unsafe { string(o.urls, "options.urls") }?,
            mode: o.mode,
            service_name: unsafe { optional_string(o.service_name, "options.service_name") }?,
            tls_ca_file: unsafe { optional_string(o.tls_ca_file, "options.tls_ca_file") }?,
            tls_cert_file: unsafe { optional_string(o.tls_cert_file, "options.tls_cert_file") }?,
            tls_key_file: unsafe { optional_string(o.tls_key_file, "options.tls_key_file") }?,
            scripting: o.scripting,
            timeout_ms: o.timeout_ms,
            deterministic_replay: o.deterministic_replay,
            durable_replicas: o.durable_replicas,
            durable_timeout_ms: o.durable_timeout_ms,
            sentinel_password: unsafe { optional_string(o.sentinel_password, "options.sentinel_password") }?,
            sentinel_username: unsafe { optional_string(o.sentinel_username, "options.sentinel_username") }?,
        })
    }

    /// The fields of the older `tk_store_redis_connect(url, timeout_ms, deterministic_replay)`.
    pub(crate) fn url_only(url: &'a str, timeout_ms: u64, deterministic_replay: bool) -> Fields<'a> {
        Fields {
            urls: url,
            mode: tk_redis_mode::Standalone as u32,
            service_name: None,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            scripting: tk_redis_scripting::Auto as u32,
            timeout_ms,
            deterministic_replay,
            durable_replicas: 0,
            durable_timeout_ms: 0,
            sentinel_password: None,
            sentinel_username: None,
        }
    }
}

/// A number that names no variant: `config_invalid` naming the option.
#[cfg(feature = "redis")]
fn unknown(option: &str, n: u32, of: &str) -> throttlekit::Error {
    throttlekit::Error::config(option, &format!("{n} is not a {of} number"))
}

/// Connects a store from `f`: the single mapping from the C fields to core's options.
#[cfg(feature = "redis")]
pub(crate) fn connect(f: Fields<'_>) -> throttlekit::Result<Arc<dyn Store>> {
    use throttlekit::redis::{RedisMode, RedisOptions, RedisStore, Scripting, split_urls};
    let mode = match f.mode {
        x if x == tk_redis_mode::Standalone as u32 => RedisMode::Standalone,
        x if x == tk_redis_mode::Cluster as u32 => RedisMode::Cluster,
        x if x == tk_redis_mode::Sentinel as u32 => RedisMode::Sentinel,
        n => return Err(unknown("redis.mode", n, "tk_redis_mode")),
    };
    let scripting = match f.scripting {
        x if x == tk_redis_scripting::Auto as u32 => Scripting::Auto,
        x if x == tk_redis_scripting::Functions as u32 => Scripting::Functions,
        x if x == tk_redis_scripting::Eval as u32 => Scripting::Eval,
        n => return Err(unknown("redis.scripting", n, "tk_redis_scripting")),
    };
    let defaults = RedisOptions::default();
    let options = RedisOptions {
        urls: split_urls(f.urls),
        mode,
        service_name: f.service_name.map(str::to_string),
        tls_ca_file: f.tls_ca_file.map(Into::into),
        tls_cert_file: f.tls_cert_file.map(Into::into),
        tls_key_file: f.tls_key_file.map(Into::into),
        scripting,
        timeout_ms: if f.timeout_ms == 0 { defaults.timeout_ms } else { f.timeout_ms },
        deterministic_replay: f.deterministic_replay,
        durable_replicas: f.durable_replicas,
        durable_timeout_ms: if f.durable_timeout_ms == 0 { defaults.durable_timeout_ms } else { f.durable_timeout_ms },
        sentinel_password: f.sentinel_password.map(str::to_string),
        sentinel_username: f.sentinel_username.map(str::to_string),
    };
    Ok(Arc::new(RedisStore::connect_blocking(options)?))
}

#[cfg(not(feature = "redis"))]
pub(crate) fn connect(_f: Fields<'_>) -> throttlekit::Result<Arc<dyn Store>> {
    Err(throttlekit::Error::not_implemented("the Redis store (built without the `redis` feature)"))
}
