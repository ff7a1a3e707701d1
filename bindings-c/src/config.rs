//! What limiters, multi limiters and shapers share in their configuration: the store, the
//! clock, the prefix and the fail policy, each optional (NULL / 0 keeps core's default).

use std::ffi::c_char;
use std::sync::Arc;

use throttlekit::{Clock, FailPolicy, Store};

use crate::args::{borrow, optional_string};
use crate::clock::tk_clock;
use crate::result::{set_last_error, tk_result};
use crate::store::tk_store;

/// What a limiter answers when its store is unavailable (`fail_policy` in the config structs,
/// passed as a `uint32_t` so that an out-of-range number is an error, not undefined behaviour).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tk_fail_policy {
    /// Core's default: fail closed for quotas, raise otherwise.
    Default = 0,
    /// Deny with `fallback = true` (never over-spend).
    FailClosed = 1,
    /// Allow with `fallback = true` (availability over accuracy).
    FailOpen = 2,
    /// Return `TK_RESULT_STORE_UNAVAILABLE`.
    Raise = 3,
}

/// `None` for [`tk_fail_policy::Default`], the policy otherwise; unknown numbers are
/// `TK_RESULT_CONFIG_INVALID`.
pub(crate) fn fail_policy(n: u32) -> Result<Option<FailPolicy>, tk_result> {
    match n {
        x if x == tk_fail_policy::Default as u32 => Ok(None),
        x if x == tk_fail_policy::FailClosed as u32 => Ok(Some(FailPolicy::FailClosed)),
        x if x == tk_fail_policy::FailOpen as u32 => Ok(Some(FailPolicy::FailOpen)),
        x if x == tk_fail_policy::Raise as u32 => Ok(Some(FailPolicy::Raise)),
        _ => {
            set_last_error(&format!("config_invalid: fail_policy {n} is not a tk_fail_policy"));
            Err(tk_result::ConfigInvalid)
        }
    }
}

/// The shared parts of a config, borrowed out of C memory and resolved.
pub(crate) struct Common {
    pub store: Option<Arc<dyn Store>>,
    /// The store's default of the server's clock (false without a store).
    pub server_clock: bool,
    pub clock: Option<Arc<dyn Clock>>,
    pub prefix: String,
}

/// Resolves the optional store, clock and prefix pointers.
///
/// # Safety
/// Each pointer must be NULL or valid (a live handle, a NUL-terminated string).
pub(crate) unsafe fn common(
    store: *const tk_store,
    clock: *const tk_clock,
    prefix: *const c_char,
) -> Result<Common, tk_result> {
    let store = if store.is_null() { None } else { Some(unsafe { borrow(store, "store") }?) };
    let server_clock = store.is_some_and(|s| s.server_clock);
    let store = store.map(|s| s.inner.clone());
    let clock = if clock.is_null() { None } else { Some(unsafe { borrow(clock, "clock") }?.inner.clone()) };
    let prefix = unsafe { optional_string(prefix, "prefix") }?.unwrap_or("").to_string();
    Ok(Common { store, server_clock, clock, prefix })
}
