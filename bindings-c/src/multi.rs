//! [`tk_multi_limiter`]: several named dimensions decided atomically under `all` or `any`
//! (core's `MultiLimiter`).

use std::ffi::{CString, c_char};
use std::sync::Arc;

use throttlekit::{Clock, Dimension, MultiLimiter, Rule, SystemClock};

use crate::args::{
    borrow, free_handle, get, into_handle, optional_string, out, slice, string, strings, try_arg, try_core,
};
use crate::clock::tk_clock;
use crate::config::{common, fail_policy};
use crate::decision::tk_decision;
use crate::lease::{idle, mode_number, tk_lease_options, tk_tier_stats, write_released};
use crate::panic::{guard, guard_void};
use crate::result::{set_last_error, tk_result, write_out};
use crate::store::tk_store;
use crate::strategy::tk_strategy;

/// How a multi limiter admits a request (`rule` argument, a `uint32_t`; 0 is not a rule, so a
/// forgotten field is an error rather than a silent `all`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tk_rule {
    /// Every dimension must allow; then all commit, else none does.
    All = 1,
    /// One allowing dimension suffices; only the allowing ones commit.
    Any = 2,
}

/// One dimension of a multi limiter.
///
/// Ownership: caller-owned; read only during `tk_multi_limiter_new`, which copies the name and
/// the strategy.
#[repr(C)]
pub struct tk_dimension {
    /// Unique, non-empty name; part of the dimension's keys (`prefix:{tag}:name:key`).
    pub name: *const c_char,
    /// The dimension's algorithm.
    pub strategy: *const tk_strategy,
    /// Units charged per unit of request cost (integer >= 1; 0 is `TK_RESULT_CONFIG_INVALID`).
    pub cost_multiplier: u64,
}

/// Optional settings of a multi limiter (zeroed or NULL: core's defaults).
///
/// Ownership: caller-owned; read only during `tk_multi_limiter_new`.
#[repr(C)]
pub struct tk_multi_limiter_config {
    /// The store (NULL: a fresh private memory store).
    pub store: *const tk_store,
    /// The clock of the clock-reading calls (NULL: the system clock).
    pub clock: *const tk_clock,
    /// The key prefix (NULL or "": none).
    pub prefix: *const c_char,
    /// A `tk_fail_policy` number (0: core's default, raise).
    pub fail_policy: u32,
    /// The Redis Cluster hash tag shared by every key (NULL: the prefix, or `tk`).
    pub hash_tag: *const c_char,
    /// Keep counters of its checks (their combined decisions), read with
    /// `tk_multi_limiter_metrics` (false: none).
    pub metrics: bool,
    /// A `tk_mode` number (0: `TK_MODE_STRICT`), as in `tk_limiter_config`: leased credits
    /// are held per dimension key (docs/leasing.md, "Multi limiters").
    pub mode: u32,
    /// The mode's options (NULL: core's defaults), as in `tk_limiter_config`; `low_water`
    /// must be 0 on a multi limiter (`TK_RESULT_CONFIG_INVALID` naming `lease.lowWater`).
    pub lease: *const tk_lease_options,
}

/// A multi-dimensional limiter.
///
/// Ownership: created by `tk_multi_limiter_new`, released with `tk_multi_limiter_free`.
///
/// Thread safety: every function except `tk_multi_limiter_free` may be called concurrently.
pub struct tk_multi_limiter {
    pub(crate) inner: MultiLimiter,
    /// The clock the clock-reading calls read (core does not lend its own).
    clock: Arc<dyn Clock>,
    /// The dimension names as C strings, so `tk_multi_limiter_dimension_name` can lend them.
    names: Vec<CString>,
}

/// Creates a multi limiter with `rule` (a `tk_rule`) over `dimensions_len` dimensions.
/// Duplicate or empty names, a zero multiplier or an unknown rule are
/// `TK_RESULT_CONFIG_INVALID`.
///
/// # Safety
/// `dimensions` must point to `dimensions_len` initialised structs whose pointers are valid;
/// `config` must be NULL or valid; `out_multi` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_multi_limiter_new(
    rule: u32,
    dimensions: *const tk_dimension,
    dimensions_len: usize,
    config: *const tk_multi_limiter_config,
    out_multi: *mut *mut tk_multi_limiter,
) -> tk_result {
    guard(|| {
        let rule = match rule {
            x if x == tk_rule::All as u32 => Rule::All,
            x if x == tk_rule::Any as u32 => Rule::Any,
            _ => {
                set_last_error(&format!("config_invalid: rule {rule} is not a tk_rule"));
                return tk_result::ConfigInvalid;
            }
        };
        let dims_in = try_arg!(unsafe { slice(dimensions, dimensions_len, "dimensions") });
        let o = try_arg!(unsafe { out(out_multi, "out_multi") });
        let mut dims = Vec::with_capacity(dims_in.len());
        let mut names = Vec::with_capacity(dims_in.len());
        for d in dims_in {
            let name = try_arg!(unsafe { string(d.name, "dimensions[].name") });
            let strategy = try_arg!(unsafe { borrow(d.strategy, "dimensions[].strategy") });
            dims.push(Dimension::new(name, strategy.inner.clone()).cost_multiplier(d.cost_multiplier));
            names.push(CString::new(name).expect("came from a C string"));
        }
        let mut multi = try_core!(MultiLimiter::new(rule, dims));
        let mut clock: Arc<dyn Clock> = Arc::new(SystemClock);
        if let Some(c) = unsafe { config.as_ref() } {
            let shared = try_arg!(unsafe { common(c.store, c.clock, c.prefix) });
            if let Some(s) = shared.store {
                multi = multi.with_store(s);
            }
            if let Some(k) = shared.clock {
                clock = k;
            }
            multi = multi.with_clock(clock.clone()).with_prefix(shared.prefix).with_server_clock(shared.server_clock);
            if let Some(p) = try_arg!(fail_policy(c.fail_policy)) {
                multi = multi.with_fail_policy(p);
            }
            if let Some(tag) = try_arg!(unsafe { optional_string(c.hash_tag, "hash_tag") }) {
                multi = try_core!(multi.with_hash_tag(tag));
            }
            // After the prefix: the metrics are labelled with it.
            multi = multi.with_metrics(c.metrics);
            let mode = try_arg!(unsafe { crate::lease::mode(c.mode, c.lease) });
            multi = try_core!(multi.with_mode(mode));
        }
        into_handle(tk_multi_limiter { inner: multi, clock, names }, o)
    })
}

/// Shared body of the two check exports.
///
/// # Safety
/// Pointers as documented on `tk_multi_limiter_check`.
#[allow(clippy::too_many_arguments)]
unsafe fn check(
    multi: *const tk_multi_limiter,
    keys: *const *const c_char,
    keys_len: usize,
    cost: u64,
    now: Option<i64>,
    out_decision: *mut tk_decision,
    out_binding: *mut usize,
    out_dimensions: *mut tk_decision,
) -> tk_result {
    guard(|| {
        let m = try_arg!(unsafe { borrow(multi, "multi") });
        let keys = try_arg!(unsafe { strings(keys, keys_len, "keys") });
        let o = try_arg!(unsafe { out(out_decision, "out_decision") });
        let now = now.unwrap_or_else(|| m.clock.now_ms());
        // Core applies the fail policy to an unavailable store.
        let decided = try_core!(m.inner.check_sync_at(&keys, cost, now));
        let binding = m.inner.dimensions().iter().position(|d| d.name == decided.binding).unwrap_or(0);
        *o = decided.decision.into();
        if let Some(b) = unsafe { out_binding.as_mut() } {
            *b = binding;
        }
        if !out_dimensions.is_null() {
            for (i, d) in decided.dimensions.iter().enumerate() {
                // SAFETY: the caller provides `keys_len` slots, and core returned exactly one
                // decision per key (it rejects a key count that differs from the dimensions).
                unsafe { *out_dimensions.add(i) = (*d).into() };
            }
        }
        tk_result::Ok
    })
}

/// Checks one request of `cost` against every dimension at the limiter clock's time.
/// `keys` holds one key per dimension, in declaration order (`keys_len` must equal the number
/// of dimensions, else `TK_RESULT_CONFIG_INVALID`). `out_decision` receives the binding
/// dimension's decision; `out_binding` (nullable) its index in declaration order; and
/// `out_dimensions` (nullable) every dimension's own decision, in `keys_len` slots.
///
/// # Safety
/// `multi` must be a live handle; `keys` must point to `keys_len` NUL-terminated strings;
/// `out_decision` must be valid for writes; `out_binding` NULL or valid; `out_dimensions` NULL
/// or valid for `keys_len` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_multi_limiter_check(
    multi: *const tk_multi_limiter,
    keys: *const *const c_char,
    keys_len: usize,
    cost: u64,
    out_decision: *mut tk_decision,
    out_binding: *mut usize,
    out_dimensions: *mut tk_decision,
) -> tk_result {
    unsafe { check(multi, keys, keys_len, cost, None, out_decision, out_binding, out_dimensions) }
}

/// `tk_multi_limiter_check` at an explicit `now` (epoch ms).
///
/// # Safety
/// As for `tk_multi_limiter_check`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tk_multi_limiter_check_at(
    multi: *const tk_multi_limiter,
    keys: *const *const c_char,
    keys_len: usize,
    cost: u64,
    now_ms: i64,
    out_decision: *mut tk_decision,
    out_binding: *mut usize,
    out_dimensions: *mut tk_decision,
) -> tk_result {
    unsafe { check(multi, keys, keys_len, cost, Some(now_ms), out_decision, out_binding, out_dimensions) }
}

/// Forgets every dimension's state for `keys` (one key per dimension).
///
/// # Safety
/// `multi` must be a live handle; `keys` must point to `keys_len` NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_multi_limiter_reset(
    multi: *const tk_multi_limiter,
    keys: *const *const c_char,
    keys_len: usize,
) -> tk_result {
    guard(|| {
        let m = try_arg!(unsafe { borrow(multi, "multi") });
        let keys = try_arg!(unsafe { strings(keys, keys_len, "keys") });
        write_out(m.inner.reset_sync(&keys), &mut ())
    })
}

/// The number of dimensions.
///
/// # Safety
/// `multi` must be a live handle; `out_len` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_multi_limiter_dimensions_len(
    multi: *const tk_multi_limiter,
    out_len: *mut usize,
) -> tk_result {
    unsafe { get(multi, "multi", out_len, "out_len", |m| m.names.len()) }
}

/// The name of dimension `index` (declaration order; e.g. the binding index of a check).
/// The string is borrowed from the limiter: valid until `tk_multi_limiter_free`, never freed
/// by the caller. An index out of range is `TK_RESULT_CONFIG_INVALID`.
///
/// # Safety
/// `multi` must be a live handle; `out_name` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_multi_limiter_dimension_name(
    multi: *const tk_multi_limiter,
    index: usize,
    out_name: *mut *const c_char,
) -> tk_result {
    guard(|| {
        let m = try_arg!(unsafe { borrow(multi, "multi") });
        let o = try_arg!(unsafe { out(out_name, "out_name") });
        match m.names.get(index) {
            Some(n) => {
                *o = n.as_ptr();
                tk_result::Ok
            }
            None => {
                set_last_error(&format!("config_invalid: dimension index {index} is out of range"));
                tk_result::ConfigInvalid
            }
        }
    })
}

/// Writes the multi limiter's `tk_mode` number into `out_mode`.
///
/// # Safety
/// `multi` must be a live handle; `out_mode` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_multi_limiter_mode(multi: *const tk_multi_limiter, out_mode: *mut u32) -> tk_result {
    unsafe { get(multi, "multi", out_mode, "out_mode", |m| mode_number(m.inner.mode())) }
}

/// Copies the multi limiter's tier counters into `out_stats`: `local_admits` and
/// `local_denials` count requests, `leases` fused lease calls (one store call each).
///
/// # Safety
/// `multi` must be a live handle; `out_stats` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_multi_limiter_tier_stats(
    multi: *const tk_multi_limiter,
    out_stats: *mut tk_tier_stats,
) -> tk_result {
    unsafe { get(multi, "multi", out_stats, "out_stats", |m| m.inner.tier_stats().into()) }
}

/// `tk_limiter_release_leases` for a multi limiter: gives back each dimension key's unspent
/// credits (keys unused for `idle_ms`; negative: every key) where that dimension's strategy
/// can take them back. Call it with `TK_RELEASE_ALL_KEYS` before `tk_multi_limiter_free`.
///
/// # Safety
/// `multi` must be a live handle; `out_units` NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_multi_limiter_release_leases(
    multi: *const tk_multi_limiter,
    idle_ms: i64,
    out_units: *mut u64,
) -> tk_result {
    guard(|| {
        let m = try_arg!(unsafe { borrow(multi, "multi") });
        unsafe { write_released(m.inner.release_leases_sync(idle(idle_ms)), out_units) }
    })
}

/// Releases a multi limiter; NULL is a no-op.
///
/// # Safety
/// `multi` must be NULL or a live handle from `tk_multi_limiter_new`, not in use elsewhere.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tk_multi_limiter_free(multi: *mut tk_multi_limiter) {
    guard_void(|| unsafe { free_handle(multi) })
}
